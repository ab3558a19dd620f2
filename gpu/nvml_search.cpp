#include "gpu/nvml_search.h"

#include <dirent.h>

#include <algorithm>
#include <charconv>

namespace koord {
namespace {

constexpr std::string_view kStem = "libnvidia-ml.so.";

// "550.54.15" -> {550, 54, 15}; nullopt for anything but dot-separated numbers.
std::optional<std::vector<int>> versionOf(std::string_view tail) {
  std::vector<int> parts;
  while (true) {
    int v = 0;
    const auto* end = tail.data() + tail.size();
    auto [p, ec] = std::from_chars(tail.data(), end, v);
    if (ec != std::errc() || p == tail.data()) return std::nullopt;
    parts.push_back(v);
    if (p == end) return parts;
    if (*p != '.') return std::nullopt;
    tail.remove_prefix(static_cast<size_t>(p - tail.data()) + 1);
  }
}

}  // namespace

std::vector<std::string> nvmlSearchDirs(const std::string& runRoot, const std::string& arch) {
  const std::string multiarch = arch + "-linux-gnu";
  std::string run = runRoot;
  if (!run.empty() && run.back() != '/') run += '/';
  return {"/usr/lib/" + multiarch,
          "/usr/lib64",
          "/usr/lib",
          "/lib/" + multiarch,
          "/lib64",
          "/usr/local/nvidia/lib64",
          "/usr/local/nvidia/lib",
          run + "nvidia/driver/usr/lib/" + multiarch,
          run + "nvidia/driver/usr/lib64"};
}

std::vector<std::string> pickNvmlFiles(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::vector<std::pair<std::vector<int>, std::string>> versioned;
  for (const std::string& n : names) {
    if (!n.starts_with(kStem)) continue;
    if (n == "libnvidia-ml.so.1") {
      out.push_back(n);
      continue;
    }
    auto v = versionOf(std::string_view(n).substr(kStem.size()));
    if (!v || v->size() < 2) continue;  // "so.1" handled above; "so.1.x" is no driver's
    versioned.emplace_back(std::move(*v), n);
  }
  std::sort(versioned.begin(), versioned.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [version, name] : versioned) out.push_back(std::move(name));
  return out;
}

std::vector<std::string> findNvml(
    const std::vector<std::string>& dirs,
    const std::function<std::vector<std::string>(const std::string&)>& list) {
  std::vector<std::string> out;
  for (const std::string& d : dirs) {
    for (const std::string& f : pickNvmlFiles(list(d))) out.push_back(d + "/" + f);
  }
  return out;
}

std::vector<std::string> listDirNames(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") out.emplace_back(n);
  }
  ::closedir(d);
  return out;
}

}  // namespace koord
