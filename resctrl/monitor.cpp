#include "resctrl/monitor.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "base/host_paths.h"
#include "base/read_file.h"
#include "base/text_scan.h"

namespace koord::resctrl {
namespace {

constexpr std::string_view kL3Domain = "mon_L3_";

// Reads one counter file into `field`. A missing file is a counter this CPU lacks
// (no MBM): the field stays empty, no error.
void readCounter(const std::string& path, std::optional<uint64_t>& field,
                 std::vector<std::string>& errors) {
  auto text = readFile(path);
  if (!text) {
    if (text.error().sysErrno != ENOENT) errors.push_back(inFile(path, text.error()).message);
    return;
  }
  auto value = parseMonCounter(*text, path);
  if (!value) {
    errors.push_back(value.error().message);
    return;
  }
  field = *value;
}

}  // namespace

Result<uint32_t> parseMonDomain(std::string_view dirName) {
  if (!dirName.starts_with(kL3Domain)) {
    return makeError(text::cat(dirName, ": not a mon_L3_<cache id> directory"));
  }
  uint64_t id = 0;
  if (text::toU64(dirName.substr(kL3Domain.size()), id) != nullptr || id > UINT32_MAX) {
    return makeError(text::cat(dirName, ": cache id is not a number"));
  }
  return static_cast<uint32_t>(id);
}

Result<std::optional<uint64_t>> parseMonCounter(std::string_view text, const std::string& file) {
  if (text.ends_with('\n')) text.remove_suffix(1);
  if (text == "Unavailable") return std::optional<uint64_t>();
  uint64_t v = 0;
  if (const char* why = text::toU64(text, v)) {
    return makeError(text::cat(file, ": \"", text, "\" ", why));
  }
  return std::optional<uint64_t>(v);
}

MonRead readMonData(const std::string& resctrlRoot, const std::vector<std::string>& groups) {
  namespace fs = std::filesystem;
  MonRead out;
  for (const auto& group : groups) {
    const std::string monData = HostPaths::join(resctrlRoot, group + "/mon_data");
    std::error_code ec;
    fs::directory_iterator it(monData, ec);
    if (ec) {
      // No mon_data: no monitoring on this CPU, or the group is not created yet.
      if (ec != std::errc::no_such_file_or_directory) {
        out.errors.push_back(text::cat(monData, ": ", ec.message()));
      }
      continue;
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      // Only L3 domains are ours; a name that claims to be one but does not parse
      // is reported, anything else (another resource's domains) is not read.
      if (!name.starts_with(kL3Domain)) continue;
      auto id = parseMonDomain(name);
      if (!id) {
        out.errors.push_back(text::cat(monData, "/", id.error().message));
        continue;
      }
      MonSample s;
      s.group = group;
      s.cacheId = *id;
      const std::string dir = it->path().string();
      readCounter(dir + "/llc_occupancy", s.llcOccupancy, out.errors);
      readCounter(dir + "/mbm_local_bytes", s.mbmLocalBytes, out.errors);
      readCounter(dir + "/mbm_total_bytes", s.mbmTotalBytes, out.errors);
      out.samples.push_back(std::move(s));
    }
    if (ec) out.errors.push_back(text::cat(monData, ": ", ec.message()));
  }
  std::sort(out.samples.begin(), out.samples.end(), [](const MonSample& a, const MonSample& b) {
    return a.group != b.group ? a.group < b.group : a.cacheId < b.cacheId;
  });
  return out;
}

}  // namespace koord::resctrl
