// Exposition: the Prometheus text format a test scraped from the agent, parsed
// line by line (comments skipped, label values unescaped), so assertions name a
// series by its labels and do not depend on label order or spacing. The parser
// is the test's own, independent of the agent's metrics library.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace koord::test {

using Labels = std::map<std::string, std::string>;

struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

// Throws std::runtime_error on a line that is not "name[{labels}] value": the
// agent sent something no Prometheus server would accept.
std::vector<Sample> parseExposition(const std::string& text);

class Scrape {
 public:
  explicit Scrape(std::string text);

  const std::string& text() const { return text_; }

  // Samples named `name` whose labels include every pair of `labels`.
  std::vector<const Sample*> find(std::string_view name, const Labels& labels = {}) const;
  // The value of the one matching sample; nullopt when none or several match.
  std::optional<double> value(std::string_view name, const Labels& labels = {}) const;
  // Whether any sample carries label `key` = `value`.
  bool anyLabelled(const std::string& key, const std::string& value) const;

 private:
  std::string text_;
  std::vector<Sample> samples_;
};

// "0.250000" or "absent", for failure messages.
std::string describe(std::optional<double> v);

}  // namespace koord::test
