// A prediction checkpoint file as restore reads it (koordlet's or ours, or anything a
// directory holds under a model's name), loaded into a model and predicted from; the
// same text as a NodeSLO's hostApplications list and as an RFC 3339 time.
#include <nlohmann/json.hpp>

#include "base/time_format.h"
#include "fuzz/fuzz_support.h"
#include "prediction/checkpoint.h"
#include "prediction/peak_models.h"
#include "qos/host_apps.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  const std::string_view in = koord::fuzz::text(data, size);
  auto c = koord::prediction::decodeCheckpoint(in, "fuzz");
  if (c.ok()) {
    c->uid = "__node__";
    koord::prediction::PeakModels models({});
    if (models.restore(*c).ok()) (void)models.predict("__node__");
    (void)koord::prediction::encodeCheckpoint(*c);
  }
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    std::vector<std::string> notes;
    const auto apps = koord::parseHostApplications(
        j.is_object() && j.contains("applications") ? j["applications"] : j, notes);
    const koord::CgroupLayout layout(koord::CgroupVersion::kV2, koord::CgroupDriver::kSystemd);
    for (const auto& a : apps) (void)koord::hostAppCgroupDir(a, layout);
  }
  (void)koord::parseRfc3339(in);
  return 0;
}
