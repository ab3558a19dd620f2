// resctrl text: schemata (root and group files), info/ numbers and masks, tasks,
// monitoring counters. A schemata that parses is also planned against: each of its
// lines and the lines groupSchemata computes are checked with schemataLineHeld.
#include <string>

#include "fuzz/fuzz_support.h"
#include "resctrl/group_plan.h"
#include "resctrl/monitor.h"
#include "resctrl/resctrl_info.h"
#include "resctrl/resctrl_writer.h"
#include "resctrl/schemata.h"

namespace rc = koord::resctrl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  const std::string_view in = koord::fuzz::text(data, size);
  const std::string file = "fuzz";
  (void)rc::parseTids(in, file);
  (void)rc::parseMonDomain(in);
  (void)rc::parseMonCounter(in, file);
  (void)rc::parseInfoNumber(in, file);
  auto mask = rc::parseCbmMask(in, file);
  auto schemata = rc::parseSchemata(in, file);
  if (!schemata.ok()) return 0;
  size_t start = 0;
  while (start <= in.size()) {
    size_t end = in.find('\n', start);
    if (end == std::string_view::npos) end = in.size();
    (void)rc::schemataLineHeld(*schemata, in.substr(start, end - start));
    start = end + 1;
  }
  rc::ResctrlInfo info;
  info.rootSchemata = *schemata;
  const uint64_t cbm = mask.ok() ? *mask : 0xfff;
  info.l3 = rc::L3Info{cbm, rc::cbmWays(cbm), 1, false};
  info.mb = rc::MbInfo{};
  if (const auto* mb = rc::findResource(*schemata, "MB"))
    info.mb->rootMaxValue = mb->domains.size();
  for (auto vendor : {rc::CpuVendor::kIntel, rc::CpuVendor::kAmd}) {
    for (const rc::ClassShare share : {rc::ClassShare{0, 100, 100}, rc::ClassShare{0, 30, 20}}) {
      auto lines = rc::groupSchemata(info, vendor, share);
      if (!lines.ok()) continue;
      for (const auto& line : *lines) (void)rc::schemataLineHeld(*schemata, line);
    }
  }
  return 0;
}
