#include "tests/support/exposition.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace koord::test {

std::vector<Sample> parseExposition(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = line.find_first_of("{ ");
    if (i == std::string::npos) {
      throw std::runtime_error("exposition line without a value: " + line);
    }
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          throw std::runtime_error("bad labels in exposition line: " + line);
        }
        std::string key = line.substr(i, eq - i);
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value.push_back(line[j] == 'n' ? '\n' : line[j]);
          } else {
            value.push_back(line[j]);
          }
        }
        s.labels.emplace(std::move(key), std::move(value));
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    while (i < line.size() && line[i] == ' ') ++i;
    s.value = std::strtod(line.c_str() + i, nullptr);
    out.push_back(std::move(s));
  }
  return out;
}

Scrape::Scrape(std::string text) : text_(std::move(text)), samples_(parseExposition(text_)) {}

std::vector<const Sample*> Scrape::find(std::string_view name, const Labels& labels) const {
  std::vector<const Sample*> out;
  for (const Sample& s : samples_) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      all = all && it != s.labels.end() && it->second == v;
    }
    if (all) out.push_back(&s);
  }
  return out;
}

std::optional<double> Scrape::value(std::string_view name, const Labels& labels) const {
  auto found = find(name, labels);
  if (found.size() != 1) return std::nullopt;
  return found.front()->value;
}

bool Scrape::anyLabelled(const std::string& key, const std::string& value) const {
  for (const Sample& s : samples_) {
    auto it = s.labels.find(key);
    if (it != s.labels.end() && it->second == value) return true;
  }
  return false;
}

std::string describe(std::optional<double> v) {
  return v ? std::to_string(*v) : std::string("absent");
}

}  // namespace koord::test
