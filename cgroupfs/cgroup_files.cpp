#include "cgroupfs/cgroup_files.h"

namespace koord {

namespace {

// A row out of place would silently name the wrong file for every reader.
constexpr bool rowsInEnumOrder() {
  for (size_t i = 0; i < kCgroupFiles.size(); ++i) {
    if (static_cast<size_t>(kCgroupFiles[i].file) != i) return false;
    if (kCgroupFiles[i].v1Subsystem == nullptr) return false;
  }
  return true;
}
static_assert(rowsInEnumOrder(), "kCgroupFiles rows must follow the CgroupFile enum");
static_assert(static_cast<size_t>(CgroupFile::kProcs) + 1 == kCgroupFileCount);

}  // namespace

std::string cgroupFilePath(const CgroupLayout& layout, const std::string& cgroupRoot,
                           std::string_view dir, CgroupFile file) {
  const char* name = cgroupFileName(file, layout.version());
  if (name == nullptr) return {};
  return layout.filePath(cgroupRoot, cgroupFileSpec(file).v1Subsystem, dir, name);
}

std::string cgroupFallbackPath(const CgroupLayout& layout, const std::string& cgroupRoot,
                               std::string_view dir, CgroupFile file) {
  const CgroupFileSpec& s = cgroupFileSpec(file);
  if (layout.version() != CgroupVersion::kV2 || s.v2Fallback == nullptr) return {};
  return layout.filePath(cgroupRoot, s.v1Subsystem, dir, s.v2Fallback);
}

}  // namespace koord
