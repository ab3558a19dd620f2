// /proc and sysfs text: every parser runs on each input (a capture of one file is a
// seed for all of them; their errors are values, never a crash).
#include "fuzz/fuzz_support.h"
#include "metrics/cpu_topology.h"
#include "metrics/node_hardware.h"
#include "metrics/proc_parsers.h"
#include "resctrl/resctrl_info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  const std::string_view in = koord::fuzz::text(data, size);
  if (auto s = koord::parseProcStat(in); s.ok()) {
    // The per-CPU lines are parallel to their ids.
    if (s->perCpu.size() != s->cpuIds.size()) __builtin_trap();
    (void)s->total.busy();
  }
  if (auto m = koord::parseMeminfo(in); m.ok())
    (void)(m->usedBytes() + m->usedWithPageCacheBytes());
  (void)koord::parseLoadavg(in);
  (void)koord::parsePressure(in);
  (void)koord::parsePidStat(in);
  (void)koord::parseCpuInfo(in);
  (void)koord::resctrl::parseCpuInfoRdt(in);
  (void)koord::parseNodeMemTotal(in);
  (void)koord::parseSysfsCpuList(in);
  (void)koord::parseSysfsId(in);
  return 0;
}
