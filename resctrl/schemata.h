// schemata: the L3 CAT and MBA lines koordlet wants in one resctrl group (LSR, LS, BE),
// computed from the host's ResctrlInfo and the class's share (NodeSLO resctrlQOS values). Pure: the
// writer (resctrl_writer.h) compares these lines with the group's schemata and writes.
//
// Decisions:
//  * L3 ways: startWay = ceil(ways*start/100), endWay = ceil(ways*end/100),
//    mask = (1<<endWay) - (1<<startWay), lower-case hex without 0x (koordinator's rule;
//    cbm 0x7ff, 0-30% -> f). Percents must satisfy 0 <= start < end <= 100.
//  * An empty way range (startWay == endWay, e.g. 1-4% of 20 ways) is an error rather
//    than a guess: the config asks for less than one way.
//  * min_cbm_bits: a non-empty range narrower than min_cbm_bits is widened upwards
//    (endWay grows, keeping the configured start, since BE's default range starts at 0
//    and an upward widening keeps LS/LSR ranges starting where configured); if it hits
//    the top way, startWay moves down. The kernel would reject a narrower mask.
//  * Cache ids come from the root schemata's L3 line (L3CODE/L3DATA under CDP, each line
//    with its own ids and the same mask) and MB line, in file order.
//  * MB, Intel: percent rounded up to info/MB/bandwidth_gran, at least min_bandwidth, at
//    most 100. AMD: 100 -> 2048 (unlimited), else 160*pct/100 truncated (koordinator's
//    AMD CCD 25*8*0.8 GB/s scale). mbaPercent must be 1..100.
//  * Intel MB in MBps mode (mba_MBps: root MB values above 100): no MB line is produced, since a
//  percent read as MBps
//    would throttle the group to ~100 MBps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "resctrl/resctrl_info.h"

namespace koord::resctrl {

// Group names koordlet creates under the resctrl root.
inline constexpr const char* kGroupLSR = "LSR";
inline constexpr const char* kGroupLS = "LS";
inline constexpr const char* kGroupBE = "BE";

// One class's share of the cache and memory bandwidth, in percent (the values of a
// NodeSLO resctrlQOS block; the QoS layer hands them over).
struct ClassShare {
  int64_t catRangeStartPercent = 0;  // 0..100, < end
  int64_t catRangeEndPercent = 100;  // 0..100
  int64_t mbaPercent = 100;          // 1..100
};

// The L3 bitmask for a percent range over `ways` ways, honouring minCbmBits.
Result<uint64_t> l3Mask(int ways, uint64_t minCbmBits, int64_t startPercent, int64_t endPercent);

// The MB schemata value for a percent.
Result<uint64_t> mbValue(const MbInfo& mb, CpuVendor vendor, int64_t percent);

// The schemata lines (no trailing '\n') for one group: L3 (or L3CODE then L3DATA) when
// L3 exists, then MB when MB exists and is in percent mode. Empty when neither exists.
Result<std::vector<std::string>> groupSchemata(const ResctrlInfo& info, CpuVendor vendor,
                                               const ClassShare& qos);

}  // namespace koord::resctrl
