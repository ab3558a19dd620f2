// The OOMScoreAdj hook's rule (Koordinator HEAD, after v1.8; reference: koordlet's
// runtimehooks/hooks/oomscoreadj): a container's oom_score_adj from its pod's
// annotations.
//   koordinator.sh/oom-score-adj-spec  {"<container>": <int>, ...}: that container's
//                                      value; a container not named falls back to
//   koordinator.sh/oom-score-adj       "<int>": every container's
// An empty annotation counts as absent; neither: nothing is set. A value outside
// [-1000, 1000] (the kernel's range) or an annotation that does not parse is refused,
// with an error naming the annotation: the container keeps what it has (koordlet: the
// same, with no fallback from a bad spec to the pod value). Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace koord {

inline constexpr const char* kOomScoreAdjAnnotation = "koordinator.sh/oom-score-adj";
inline constexpr const char* kOomScoreAdjSpecAnnotation = "koordinator.sh/oom-score-adj-spec";
inline constexpr int64_t kOomScoreAdjMin = -1000;
inline constexpr int64_t kOomScoreAdjMax = 1000;

// The container's value; nullopt when neither annotation applies to it.
Result<std::optional<int64_t>> oomScoreAdjFor(const std::map<std::string, std::string>& annotations,
                                              std::string_view container);

}  // namespace koord
