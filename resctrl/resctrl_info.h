// resctrl_info: what the host's RDT (resctrl) offers, parsed from text. Parsers take a
// file's text (no I/O) so tests are string literals; readResctrlInfo() is the thin reader
// over <sysFsRoot>/resctrl. Used by schemata.h to compute the LSR/LS/BE group schemata.
//
// Decisions:
//  * "supported" (koordlet's gate) needs both cpuinfo flags cat_l3 and mba, seen on any
//    cpu's flags line; the vendor comes from vendor_id (AuthenticAMD -> AMD).
//  * cbm_mask must be a non-empty hex 2^k-1 (contiguous from bit 0), at most 64 bits.
//  * A missing info/L3 (or info/L3CODE under CDP) or info/MB is normal: that resource is
//    absent (std::nullopt). A missing root schemata means resctrl is not mounted: error,
//    with the ENOENT errno kept so the caller can tell it apart.
//  * The root MB line's largest value is kept so schemata.h can tell Intel's MBps mode
//    (mount option mba_MBps, values above 100) from percent mode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/host_paths.h"
#include "base/result.h"

namespace koord::resctrl {

enum class CpuVendor { kIntel, kAmd };

struct CpuRdtFlags {
  bool catL3 = false;
  bool mba = false;
  CpuVendor vendor = CpuVendor::kIntel;  // AMD iff some vendor_id is AuthenticAMD
  // koordlet enables resctrl only with both L3 CAT and MBA.
  bool supported() const { return catL3 && mba; }
};

// Scans every "flags" and "vendor_id" line of /proc/cpuinfo. Never fails: a text without
// the flags reports no support.
CpuRdtFlags parseCpuInfoRdt(std::string_view cpuinfo);

// info/<L3|L3CODE>/cbm_mask: hex without 0x, trailing newline allowed. Errors name `file`.
Result<uint64_t> parseCbmMask(std::string_view text, const std::string& file);

// Number of ways (bits) of a valid cbm mask (2^k-1 -> k).
int cbmWays(uint64_t cbmMask);

// One decimal number with optional trailing newline (min_cbm_bits, bandwidth_gran,
// min_bandwidth). Errors name `file`.
Result<uint64_t> parseInfoNumber(std::string_view text, const std::string& file);

// One "<id>=<value>" of a schemata line; the value is kept as text with blanks trimmed.
struct SchemataDomain {
  uint32_t id = 0;
  std::string value;
  bool operator==(const SchemataDomain&) const = default;
};

// One schemata line: resource name (L3, L3CODE, L3DATA, MB, L2, ...) and its domains in
// file order (ids need not be contiguous).
struct SchemataResource {
  std::string name;
  std::vector<SchemataDomain> domains;
};

// A schemata file. Leading/trailing blanks on a line and around ids/values are
// tolerated (the kernel pads MB values: "MB:0=  100"); blank lines are skipped. A line
// without ':', an empty name, a domain without '=', a non-numeric or repeated id or an
// empty value is an error naming `file` and the 1-based line.
Result<std::vector<SchemataResource>> parseSchemata(std::string_view text, const std::string& file);

// The resource called `name`, or nullptr.
const SchemataResource* findResource(const std::vector<SchemataResource>& schemata,
                                     std::string_view name);

struct L3Info {
  uint64_t cbmMask = 0;
  int ways = 0;
  uint64_t minCbmBits = 1;
  bool cdp = false;  // info/L3CODE + info/L3DATA instead of info/L3
};

struct MbInfo {
  uint64_t bandwidthGran = 10;
  uint64_t minBandwidth = 10;
  // Largest value on the root MB line. Above 100 on Intel means the mba_MBps mount
  // option (MBps, not percent); AMD's absolute values (2048 = unlimited) are always so.
  uint64_t rootMaxValue = 0;
};

struct ResctrlInfo {
  std::optional<L3Info> l3;
  std::optional<MbInfo> mb;
  std::vector<SchemataResource> rootSchemata;
};

// Reads <sysFsRoot>/resctrl/{schemata,info/...}. Errors name the file.
Result<ResctrlInfo> readResctrlInfo(const HostPaths& paths);

}  // namespace koord::resctrl
