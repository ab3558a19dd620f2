// The device-info directory (--xpu-device-infos-dir, koordlet's
// /var/run/koordlet/xpu-device-infos/) read for the Device: every regular file in
// name order, each parsed by gpu/device_infos.h. A file that does not parse is
// reported (the agent says it once, through its FailureLog) and its last good
// devices, if it had any, are kept: a writer caught mid-write, or broken, does not
// take its devices off the node; a file removed takes them with it. Deliberately unlike koordlet,
// which fails the whole read on one bad file and reads dotfiles: names starting with '.' are
// koord-device-daemon's temporary files (renameio's ".ic-device<random>", empty
// or half written), and are skipped. Bounded: at most kMaxNames names listed, of
// which at most kMaxFiles files of at most kMaxFileBytes each are read; more is
// said and left out.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpu/device_infos.h"

namespace koord {

class DeviceInfoDir {
 public:
  static constexpr size_t kMaxNames = 1024;
  static constexpr size_t kMaxFiles = 64;
  static constexpr size_t kMaxFileBytes = 1u << 20;

  explicit DeviceInfoDir(std::string dir) : dir_(std::move(dir)) {}

  struct Read {
    std::vector<XpuDevice> devices;   // every file's, in file then array order
    std::vector<std::string> errors;  // this read's, one per file that failed
    std::vector<std::string> kept;    // files that failed whose last good devices stay
    bool dirMissing = false;
    size_t files = 0;  // files read (good or kept)
  };
  Read read();

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::map<std::string, std::vector<XpuDevice>> lastGood_;  // file name -> devices
};

}  // namespace koord
