// Explain: why every knob the agent manages holds its value (GET /explain and the
// `koordlet explain` subcommand). The executor keeps, per knob per cgroup, its
// owner, the value asked and why, the value written and when, someone else's value
// found there (drift) and the last refused write (cgroupfs/executor.h KnobRecord);
// this module turns a query into the cgroup dirs to look at, and the records, the
// kernel's values and the pod into the answer, as JSON or as a table. No I/O here:
// the caller reads the kernel.
//
// Query (GET /explain?...; values URL-encoded):
//   pod=<namespace>/<name> | uid=<pod uid>   the pod's dir, its containers', and the
//                                            kube-QoS dir that bounds them
//   path=<dir relative to the cgroup root>   that dir (below=true: and every cgroup under it)
//   knob=<file, v1 name>                     narrows any of the above; alone: that knob
//                                            in every cgroup the agent manages
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "cgroupfs/executor.h"
#include "kube/pod.h"

namespace koord {

struct ExplainQuery {
  std::string pod;  // "namespace/name"
  std::string uid;
  std::string path;
  bool below = false;
  std::optional<Knob> knob;
};

// Parses the query string. Errors name the parameter: an unknown one, two of
// pod/uid/path, none of pod/uid/path/knob, a knob this agent does not manage, a
// path with "." or ".." parts or a NUL, bad %-encoding.
Result<ExplainQuery> parseExplainQuery(std::string_view query);

// "cpu.cfs_quota_us" -> the knob (its v1 file name, as the audit log writes it).
std::optional<Knob> knobByName(std::string_view name);

// One knob to show: the executor's record, the kernel's text now (or why it could
// not be read), the file's host path, and what the dir is to the query.
struct ExplainEntry {
  KnobRecord record;
  Result<std::string> kernel = std::string();
  std::string file;   // host path of the file
  std::string scope;  // "pod", "container <name>", "kube-QoS dir", "cgroup"
  // Whether the kernel's text holds the value asked (Executor::holds); nullopt when
  // either is unknown.
  std::optional<bool> matches;
};

// {"query": {...}, "pod": {...} | null, "knobs": [...]}; each knob:
//   path (host file), dir, knob, scope, owner, kernel (text or null) and kernelError,
//   asked, written {value, at, dryRun} | null, inputs [{name, value, source}], rule,
//   drift {value, replaced, noticedAt, times} | null, refused {...} | null,
//   matches (kernel == what we last wrote or asked; null when unknown).
// render: a value as the hierarchy shows it (Executor::render).
nlohmann::json explainJson(const ExplainQuery& query, const Pod* pod,
                           const std::vector<ExplainEntry>& entries,
                           const std::function<std::string(Knob, const KnobValue&)>& render);

// The pod's facts the strategies decide from: QoS (label and kube class), the
// koordinator annotations and labels they read, and batch requests and limits.
nlohmann::json explainPod(const Pod& pod);

// The table `koordlet explain` prints from explainJson's answer.
std::string explainTable(const nlohmann::json& answer);

}  // namespace koord
