#include "gpu/device_info_dir.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/read_file.h"

namespace koord {

DeviceInfoDir::Read DeviceInfoDir::read() {
  Read out;
  std::vector<std::string> names;
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) {
    out.dirMissing = errno == ENOENT;
    if (!out.dirMissing) out.errors.push_back(dir_ + ": " + std::strerror(errno));
    lastGood_.clear();
    return out;
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n.empty() || n.front() == '.') continue;  // ".", "..", writers' temporary files
    if (names.size() == kMaxNames) {
      out.errors.push_back(dir_ + ": more than " + std::to_string(kMaxNames) +
                           " names; the rest are not read");
      break;
    }
    names.emplace_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  std::string sep = dir_.empty() || dir_.back() == '/' ? "" : "/";
  std::map<std::string, std::vector<XpuDevice>> good;
  for (const std::string& name : names) {
    const std::string path = dir_ + sep + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // dirs, dangling
    if (out.files == kMaxFiles) {
      out.errors.push_back(dir_ + ": more than " + std::to_string(kMaxFiles) + " files; " + name +
                           " and after it are not read");
      break;
    }
    ++out.files;
    auto text = readFile(path, kMaxFileBytes);
    Result<std::vector<XpuDevice>> devices =
        text ? parseDeviceInfoFile(*text, path) : Result<std::vector<XpuDevice>>(text.error());
    if (!devices) {
      out.errors.push_back(devices.error().message);
      if (auto it = lastGood_.find(name); it != lastGood_.end()) {
        good[name] = std::move(it->second);
        out.kept.push_back(name);
      }
      continue;
    }
    good[name] = std::move(*devices);
  }
  for (const std::string& name : names) {
    if (auto it = good.find(name); it != good.end()) {
      out.devices.insert(out.devices.end(), it->second.begin(), it->second.end());
    }
  }
  lastGood_ = std::move(good);
  return out;
}

}  // namespace koord
