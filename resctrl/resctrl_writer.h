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
//
// More decisions:
//  * A group's schemata or tasks file that cannot be read or parsed is an error naming
//    the file; that part of the group is skipped (counted once as failed), since
//    writing without knowing what is there would be a blind write.
//  * A group with schemataKnown=false gets no schemata writes (its tasks still do).
//  * Dry-run reads, compares and logs "dry-run: would ..." lines; it creates no group,
//    writes no file (not even the ownership record) and counts nothing as written
//    (what is already held is counted unchanged).
//  * The I/O that has kernel semantics (mkdir of a group, the single write() per line
//    or tid) goes through ResctrlFileOps, so tests can act as the kernel; reads use the
//    real filesystem.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/log.h"
#include "resctrl/group_ownership.h"
#include "resctrl/group_plan.h"
#include "resctrl/resctrl_info.h"

namespace koord::resctrl {

// How a resctrl file is opened: schemata O_WRONLY (the kernel parses each write as a
// whole and changes only the resources it names), tasks O_WRONLY|O_APPEND.
enum class WriteMode { kSchemata, kTasks };

struct ResctrlFileOps {
  // Writes `data` to `path` with exactly one write() call; returns errno, 0 on success.
  // No O_CREAT: the kernel makes a group's files, a missing one is an error.
  std::function<int(const std::string& path, std::string_view data, WriteMode mode)> write;
  // mkdir(path, 0755); returns errno, 0 on success.
  std::function<int(const std::string& path)> makeDir;
};
ResctrlFileOps systemResctrlFileOps();

struct WriterStats {
  uint64_t groupsCreated = 0;
  uint64_t groupsRefused = 0;  // exist, not ours (or a name that is not one dir below root)
  uint64_t groupsFailed = 0;   // mkdir failed (the group is skipped this round)
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
                bool dryRun, ResctrlFileOps ops = systemResctrlFileOps());
  WriterStats apply(const ResctrlPlan& plan);

 private:
  void applySchemata(const GroupPlan& g, const std::string& dir, WriterStats& stats);
  void applyTasks(const GroupPlan& g, const std::string& dir, WriterStats& stats);
  std::string root_;
  GroupOwnership* ownership_;
  FailureLog* failures_;
  bool dryRun_;
  ResctrlFileOps ops_;
};

// Is `current` (a group's parsed schemata) already holding `line`'s values for every
// cache id the line names? Masks compare as hex numbers (L3, L3CODE, L3DATA, L2...),
// MB as decimal. Errors: `line` does not parse.
Result<bool> schemataLineHeld(const std::vector<SchemataResource>& current, std::string_view line);

}  // namespace koord::resctrl
