// Watching the kubepods tree for pod cgroups coming and going (issue 46): inotify
// on the kubepods root and its BestEffort and Burstable dirs (three watches per
// hierarchy, whatever the pod count), so a new pod's cgroup wakes the agent at once
// instead of at the next kubelet poll.
//
// Apart from I/O: parseInotifyEvents (a read buffer -> events) and podUidOfDir (a
// directory name -> the pod's uid, both drivers' names) are pure; PodDirWatch owns
// the inotify fd and its watches and never blocks (the agent reads the fd from its
// loop when it is readable). Errors are values: the agent falls back to polling
// when inotify is refused (fs.inotify.max_user_instances or max_user_watches
// reached: EMFILE, ENOSPC) and says so once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace koord {

struct InotifyEvent {
  int wd = -1;
  uint32_t mask = 0;
  std::string name;  // "" for events on the watched dir itself
};

// The events of one read() of an inotify fd. A truncated record (never from the
// kernel, which returns whole events) ends the list.
std::vector<InotifyEvent> parseInotifyEvents(std::span<const char> buffer);

// The pod uid a kubepods child directory names: cgroupfs "pod<uid>", systemd
// "kubepods-pod<uid_>.slice" / "kubepods-<qos>-pod<uid_>.slice" (underscores back
// to dashes); nullopt for anything else (a QoS dir, a container, a stray dir).
std::optional<std::string> podUidOfDir(std::string_view name);

// What one read of the watch saw.
struct PodDirChanges {
  std::vector<std::string> added, removed;  // pod uids
  bool treeGone = false;                    // a watched dir was removed: the watch must be rebuilt
  bool overflow = false;                    // the kernel's queue overflowed: events were lost
};

class PodDirWatch {
 public:
  PodDirWatch() = default;
  ~PodDirWatch();
  PodDirWatch(const PodDirWatch&) = delete;
  PodDirWatch& operator=(const PodDirWatch&) = delete;

  // Opens the fd (non-blocking) and watches each dir (absolute paths). Errors name
  // the call and errno (EMFILE: max_user_instances; ENOSPC: max_user_watches; ENOENT:
  // the dir is not there yet); on error nothing stays open.
  Status open(const std::vector<std::string>& dirs);
  void close();
  bool isOpen() const { return fd_ >= 0; }
  // The errno of the last failed open (0 after a good one): ENOENT is "not there yet".
  int openErrno() const { return openErrno_; }
  int fd() const { return fd_; }

  // Reads what is queued (non-blocking; nothing queued: no changes).
  Result<PodDirChanges> read();

 private:
  int fd_ = -1;
  int openErrno_ = 0;
  std::map<int, std::string> watched_;  // wd -> dir
};

}  // namespace koord
