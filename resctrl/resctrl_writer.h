// resctrl_writer: the one place that writes resctrl files (the resctrl counterpart of
// cgroupfs/executor.h). For each group of a ResctrlPlan it
//  * creates the group dir (mode 0755) when missing and records it as ours; a group
//    that exists but is not ours (GroupOwnership) is left alone, logged once;
//  * reads the group's schemata and writes each planned line whose values differ
//    (compared as numbers per cache id: the kernel prints masks zero-padded, "00f",
//    and MB values padded, "  100"), one write per resource line, "L3:0=f;1=f\n";
//    a rejected line's error quotes the kernel's info/last_cmd_status;
//  * reads the group's tasks and writes each planned tid not already there, one tid
//    per write() as the kernel requires; ESRCH (the thread exited since it was
//    listed) is normal and counted as vanished.
// Never writes the root group, never removes a group. Errors are counted and logged
// once per (group, kind) through the FailureLog. Dry-run logs instead of writing.
#pragma once

#include <cstdint>
#include <string>

#include "agent/log.h"
#include "resctrl/group_ownership.h"
#include "resctrl/resctrl_plan.h"

namespace koord::resctrl {

struct WriterStats {
  uint64_t groupsCreated = 0;
  uint64_t groupsRefused = 0;  // exist, not ours
  uint64_t schemataWritten = 0;
  uint64_t schemataUnchanged = 0;
  uint64_t schemataFailed = 0;  // the kernel rejected the line, or the file failed
  uint64_t tasksWritten = 0;
  uint64_t tasksUnchanged = 0;  // already in the group
  uint64_t tasksVanished = 0;   // ESRCH
  uint64_t tasksFailed = 0;
  WriterStats& operator+=(const WriterStats& o);
};

class ResctrlWriter {
 public:
  // resctrlRoot: <sys-fs-root>/resctrl.
  ResctrlWriter(std::string resctrlRoot, GroupOwnership& ownership, FailureLog& failures,
                bool dryRun);
  WriterStats apply(const ResctrlPlan& plan);

 private:
  std::string root_;
  GroupOwnership* ownership_;
  FailureLog* failures_;
  bool dryRun_;
};

// Is `current` (a group's parsed schemata) already holding `line`'s values for every
// cache id the line names? Masks compare as hex numbers (L3, L3CODE, L3DATA, L2...),
// MB as decimal. Errors: `line` does not parse.
Result<bool> schemataLineHeld(const std::vector<SchemataResource>& current,
                              std::string_view line);

}  // namespace koord::resctrl
