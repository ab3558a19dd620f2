// group_plan: what the LSR/LS/BE groups should hold, as values: each group's
// schemata lines and the thread ids it should contain. The QoS layer computes it
// (qos/resctrl_plan.h, from the NodeSLO and the pods); the writer (resctrl_writer.h)
// compares it with the groups and writes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord::resctrl {

struct GroupPlan {
  std::string group;                  // kGroupLSR, kGroupLS, kGroupBE
  std::vector<std::string> schemata;  // lines without '\n', as groupSchemata gives them
  bool schemataKnown = true;          // false: computing them failed (see errors)
  std::vector<int32_t> tids;          // sorted, unique
};

struct ResctrlPlan {
  std::vector<GroupPlan> groups;    // always LSR, LS, BE in that order
  std::vector<std::string> errors;  // "resctrlQOS of class LS: ..."
};

// One tid per line (a group's or a cgroup's `tasks`, v2 `cgroup.threads`). Errors name
// `file` and the line.
Result<std::vector<int32_t>> parseTids(std::string_view text, const std::string& file);

}  // namespace koord::resctrl
