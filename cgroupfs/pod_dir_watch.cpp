#include "cgroupfs/pod_dir_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace koord {
namespace {

constexpr uint32_t kChildMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR;
constexpr uint32_t kSelfMask = IN_DELETE_SELF | IN_MOVE_SELF;

bool validUidText(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::vector<InotifyEvent> parseInotifyEvents(std::span<const char> buffer) {
  std::vector<InotifyEvent> out;
  size_t at = 0;
  while (at + sizeof(inotify_event) <= buffer.size()) {
    inotify_event head;
    std::memcpy(&head, buffer.data() + at, sizeof head);
    const size_t next = at + sizeof(inotify_event) + head.len;
    if (next > buffer.size()) break;
    InotifyEvent e;
    e.wd = head.wd;
    e.mask = head.mask;
    if (head.len > 0) {
      const char* name = buffer.data() + at + sizeof(inotify_event);
      e.name.assign(name, strnlen(name, head.len));  // NUL-padded
    }
    out.push_back(std::move(e));
    at = next;
  }
  return out;
}

std::optional<std::string> podUidOfDir(std::string_view name) {
  if (name.starts_with("pod")) {
    std::string_view uid = name.substr(3);
    if (!validUidText(uid) || uid.find('_') != std::string_view::npos) return std::nullopt;
    return std::string(uid);
  }
  if (!name.starts_with("kubepods-") || !name.ends_with(".slice")) return std::nullopt;
  std::string_view rest = name.substr(9, name.size() - 9 - 6);
  for (std::string_view qos : {"besteffort-", "burstable-"}) {
    if (rest.starts_with(qos)) rest.remove_prefix(qos.size());
  }
  if (!rest.starts_with("pod")) return std::nullopt;
  std::string uid(rest.substr(3));
  if (!validUidText(uid) || uid.find('-') != std::string::npos) return std::nullopt;
  for (char& c : uid) {
    if (c == '_') c = '-';
  }
  return uid;
}

PodDirWatch::~PodDirWatch() { close(); }

void PodDirWatch::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  watched_.clear();
}

Status PodDirWatch::open(const std::vector<std::string>& dirs) {
  close();
  openErrno_ = 0;
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    openErrno_ = err;
    return makeError(std::string("inotify_init1: ") + std::strerror(err) +
                     (err == EMFILE ? " (fs.inotify.max_user_instances reached)" : ""));
  }
  for (const std::string& d : dirs) {
    const int wd = inotify_add_watch(fd_, d.c_str(), kChildMask | kSelfMask);
    if (wd < 0) {
      const int err = errno;
      close();
      openErrno_ = err;
      return makeError("inotify_add_watch " + d + ": " + std::strerror(err) +
                       (err == ENOSPC ? " (fs.inotify.max_user_watches reached)" : ""));
    }
    watched_[wd] = d;
  }
  return Ok{};
}

Result<PodDirChanges> PodDirWatch::read() {
  PodDirChanges out;
  if (fd_ < 0) return out;
  alignas(inotify_event) std::array<char, 16 * 1024> buf;
  for (;;) {
    const ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      return makeError(std::string("read inotify: ") + std::strerror(errno));
    }
    if (n == 0) break;
    for (const InotifyEvent& e : parseInotifyEvents({buf.data(), static_cast<size_t>(n)})) {
      if (e.mask & IN_Q_OVERFLOW) out.overflow = true;
      if (e.mask & (kSelfMask | IN_IGNORED)) {
        if (watched_.erase(e.wd) > 0) out.treeGone = true;
        continue;
      }
      if (!(e.mask & IN_ISDIR)) continue;
      auto uid = podUidOfDir(e.name);
      if (!uid) continue;
      if (e.mask & (IN_CREATE | IN_MOVED_TO))
        out.added.push_back(std::move(*uid));
      else if (e.mask & (IN_DELETE | IN_MOVED_FROM))
        out.removed.push_back(std::move(*uid));
    }
  }
  return out;
}

}  // namespace koord
