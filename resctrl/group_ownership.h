// group_ownership: which resctrl groups this agent may write. Groups it created are
// its own; a group it did not create (another tool's, or one left by a koordlet that
// ran before us) is never touched unless the operator says so with
// --resctrl-adopt-groups. The record lives in a small state file
// (--resctrl-state-file, default <var-run-root>/koordlet/resctrl-groups): resctrl
// is an in-memory filesystem gone at reboot, and /var/run is too, so the record and
// the groups share a lifetime; across agent restarts the record says what we made.
//
// File format: one group name per line, each a plain directory name (not empty, no
// '/', no blanks or control bytes, not "." or ".."). A missing file is an empty record;
// an unreadable or malformed one is an error naming the file (and line), and the record
// starts empty (we then touch nothing that exists until told to adopt). The file is
// replaced atomically (write <file>.tmp, rename), its directory created when missing,
// so a crash leaves the old record or the new one, never half of one.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "base/result.h"

namespace koord::resctrl {

class GroupOwnership {
 public:
  // stateFile "" keeps the record in memory only (tests, --resctrl-state-file="").
  // The returned error (if any) is for logging; the object is usable either way.
  GroupOwnership(std::string stateFile, bool adoptExisting);
  const Status& loadStatus() const { return loadStatus_; }

  // May we write this group? `exists`: the group's dir is there now.
  //   not there          -> true (we will create it, then call created())
  //   there and recorded -> true
  //   there, not ours    -> adoptExisting (and recorded when adopted)
  // An adoption whose state file cannot be saved is logged (once per group: the
  // group is then recorded in memory, so it is not adopted again).
  bool mayUse(const std::string& group, bool exists);
  // mayUse's answer without recording an adoption (dry-run: writes nothing).
  bool wouldUse(const std::string& group, bool exists) const;
  // Records a group we created (writes the state file; an error is returned, the
  // in-memory record is kept).
  Status created(const std::string& group);
  bool owns(std::string_view group) const { return owned_.count(std::string(group)) != 0; }
  // The groups recorded (`koordlet restore` removes them).
  const std::set<std::string>& groups() const { return owned_; }
  // The group is gone (removed by restore): drops it from the record and saves.
  Status forget(const std::string& group);

 private:
  Status save() const;
  std::string stateFile_;
  bool adopt_;
  std::set<std::string> owned_;
  Status loadStatus_;
};

}  // namespace koord::resctrl
