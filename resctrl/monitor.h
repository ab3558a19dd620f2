// monitor: the resctrl monitoring counters of our groups (gate ResctrlCollector):
// <group>/mon_data/mon_L3_<id>/{llc_occupancy, mbm_local_bytes, mbm_total_bytes},
// exported as koordlet_resctrl_llc_occupancy{cache_id,qos} and
// koordlet_resctrl_memory_bandwidth{cache_id,qos,mb_type} (koordlet's names and labels;
// like koordlet the bandwidth gauge carries the kernel's cumulative byte counter,
// mb_type "mbm_local_bytes" / "mbm_total_bytes").
// A counter file reading "Unavailable" (the kernel's word when the RMID's counter is
// not valid) or absent (no MBM on this CPU) is skipped, not an error. The kernel's
// "Error" (the counter read failed) is an error naming the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord::resctrl {

struct MonSample {
  std::string group;  // "LSR", "LS", "BE"
  uint32_t cacheId = 0;
  std::optional<uint64_t> llcOccupancy;
  std::optional<uint64_t> mbmLocalBytes;
  std::optional<uint64_t> mbmTotalBytes;
};

// "mon_L3_00" -> 0. Errors name the dir.
Result<uint32_t> parseMonDomain(std::string_view dirName);

// A counter file's text: a number, or "Unavailable" (-> nullopt). Errors name `file`.
Result<std::optional<uint64_t>> parseMonCounter(std::string_view text, const std::string& file);

struct MonRead {
  // One per mon_L3_<id> dir, sorted by group name, then cache id; a sample whose
  // counters all failed or are unavailable is still listed, every field empty.
  std::vector<MonSample> samples;
  std::vector<std::string> errors;  // one per malformed file or unreadable dir
};

// Reads mon_data of each group under resctrlRoot. A group without mon_data (no
// monitoring on this CPU, or the group is not created yet) gives no samples and no
// error. Entries of mon_data not named mon_L3_* are not read.
MonRead readMonData(const std::string& resctrlRoot, const std::vector<std::string>& groups);

}  // namespace koord::resctrl
