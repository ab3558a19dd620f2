// cgroup file text: the generic parsers, cpu.max / cfs quota+period (two files: the
// input split at its first NUL), CPU lists and every knob on both cgroup versions.
#include <array>
#include <optional>

#include "cgroupfs/cgroup_parsers.h"
#include "cgroupfs/knob.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  const std::string_view in = koord::fuzz::text(data, size);
  (void)koord::parseSingleUint(in);
  (void)koord::parseSingleInt(in);
  (void)koord::parseFlatKeyed(in);
  static constexpr std::string_view kKeys[] = {"usage_usec", "nr_throttled",        "cache",
                                               "rss",        "total_inactive_file", "pgfault"};
  std::array<std::optional<uint64_t>, std::size(kKeys)> values;
  (void)koord::pickFlatKeyed(in, kKeys, values);
  (void)koord::parseCpuMax(in);
  const auto [quota, period] = koord::fuzz::splitAtNul(in);
  (void)koord::parseCfsQuotaPeriod(quota, period);
  if (auto cpus = koord::parseCpuList(in); cpus.ok()) (void)koord::renderCpuList(*cpus);
  for (size_t k = 0; k < koord::kKnobCount; ++k) {
    const auto knob = static_cast<koord::Knob>(k);
    for (auto version : {koord::CgroupVersion::kV1, koord::CgroupVersion::kV2}) {
      auto value = koord::parseKnob(knob, version, in);
      if (!value.ok()) continue;
      // A parsed value in range renders back to text without failing.
      if (koord::checkKnobRange(knob, *value).ok()) (void)koord::renderKnob(knob, version, *value);
    }
  }
  return 0;
}
