// The executor: checks, orders and performs cgroup writes (reference koordlet.md
// §8.1), with an audit log. See executor.h for the contract.
#include "cgroupfs/executor.h"

#include "base/time_format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "base/audit_log.h"
#include "base/quote.h"
#include "base/read_file.h"
#include "cgroupfs/cgroup_files.h"

namespace koord {

namespace {

// The directory part of a file path ("" without a '/').
std::string_view parentDir(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

// cgroup files are short; a CPU list of 65536 single ids stays well under this.
constexpr size_t kReadCap = 1u << 20;

std::string trimmed(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return std::string(text);
}

size_t depthOf(std::string_view dir) {
  return static_cast<size_t>(std::count(dir.begin(), dir.end(), '/')) + 1;
}

// -1 ("unlimited") compares above every number.
bool numberBelow(const KnobSpec& spec, int64_t a, int64_t b) {
  if (spec.minusOneIsUnlimited) {
    if (a == -1) return false;
    if (b == -1) return true;
  }
  return a < b;
}

bool isSubset(const std::vector<int>& a, const std::vector<int>& b) {
  return std::includes(b.begin(), b.end(), a.begin(), a.end());
}

std::vector<int> unionOf(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

Executor::Executor(ExecutorConfig config, CgroupLayout layout, KnobSupport support,
                   const Clock& clock, FailureLog& failures)
    : config_(std::move(config)),
      layout_(std::move(layout)),
      kubeRoot_(layout_.kubeRootDir()),
      support_(support),
      clock_(&clock),
      failures_(&failures) {}

bool Executor::insideKubepods(const std::string& dir) const {
  if (dir.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (start <= dir.size()) {
    size_t end = dir.find('/', start);
    if (end == std::string::npos) end = dir.size();
    const std::string_view part(dir.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  // A component boundary, so "kubepods-other" is not inside "kubepods".
  const std::string& root = kubeRoot_;
  if (dir == root || (dir.size() > root.size() && dir.compare(0, root.size(), root) == 0 &&
                      dir[root.size()] == '/')) {
    return true;
  }
  return std::find(outside_.begin(), outside_.end(), dir) != outside_.end();
}

std::string Executor::readOnlyKey() const {
  return "executor read-only cgroup root " + config_.cgroupRoot;
}

void Executor::observe(const char* status, Clock::Monotonic since) const {
  if (!observer_) return;
  observer_(status, std::chrono::duration<double, std::milli>(clock_->now() - since).count());
}

Result<std::string_view> Executor::currentText(const std::string& path, Clock::Monotonic* knownAt,
                                               bool fresh, bool* wasRead) const {
  const Clock::Monotonic now = clock_->now();
  if (knownAt) *knownAt = now;
  if (wasRead) *wasRead = true;
  if (config_.verify.count() <= 0) {
    if (Status st = readFileInto(path, readBuf_, kReadCap); !st) return st.error();
    return std::string_view(readBuf_);
  }
  auto [it, inserted] = known_.try_emplace(path);
  if (!inserted && !fresh && now - it->second.at < config_.verify) {
    if (knownAt) *knownAt = it->second.at;
    if (wasRead) *wasRead = false;
    return std::string_view(it->second.text);
  }
  // Read into the one kept buffer, then into the entry (a knob's text fits in the
  // string itself, so an entry costs no storage of its own; a buffer per entry
  // would be 4 KiB each).
  if (Status st = readFileInto(path, readBuf_, kReadCap); !st) {
    known_.erase(it);
    return st.error();
  }
  it->second.text.assign(readBuf_);
  it->second.at = now;
  return std::string_view(it->second.text);
}

void Executor::know(const std::string& path, const std::string& text) {
  if (config_.verify.count() > 0) known_[path] = Known{text, clock_->now()};
}

Result<KnobValue> Executor::read(const std::string& dir, Knob knob) const {
  const KnobSpec& spec = knobSpec(knob);
  const std::string path = cgroupFilePath(layout_, config_.cgroupRoot, dir, spec.file);
  if (!support_.has(knob) || path.empty()) {
    return makeError(std::string(spec.name) + " is not supported here");
  }
  auto text = currentText(path);
  if (!text) return text.error();
  auto value = parseKnob(knob, layout_.version(), *text, weights_);
  if (!value) return makeError(path + ": " + value.error().message);
  // An empty v2 cpuset.cpus means "the parent's": a strategy stepping from the
  // current CPUs gets those in force, from the row's fallback (cgroup_files.h).
  const std::string fallback = cgroupFallbackPath(layout_, config_.cgroupRoot, dir, spec.file);
  if (!fallback.empty() && spec.cpuList && value->cpus.empty()) {
    if (auto eff = readFile(fallback, kReadCap)) {
      if (auto parsed = parseKnob(knob, layout_.version(), *eff, weights_)) return *parsed;
    }
  }
  return *value;
}

void Executor::setCpuWeightConversion(CpuWeightConversion c) {
  if (c == weights_) return;
  weights_ = c;
  for (auto& [key, own] : owners_) {
    if (key.second != Knob::kCpuShares) continue;
    if (own.events) own.events->written.reset();
    own.sameUntil = {};  // found equal under the old conversion: compare again
  }
}

void Executor::refuse(const char* reason, ExecutorStats& batch) {
  ++batch.refused;
  if (refusalObserver_) refusalObserver_(reason);
}

void Executor::noteRefusal(Owner& own, const CgroupWrite& write, const char* reason,
                           std::string message) {
  Events& ev = own.ev();
  ev.refusal = KnobRefusal{render(write.knob, write.value), reason, write.owner, std::move(message),
                           clock_->wallNow()};
  ev.refusedAt = clock_->now();
}

void Executor::noteDrift(Owner& own, const CgroupWrite& write, const std::string& text) {
  Events& ev = own.ev();
  ev.drift = text;
  ev.driftReplaced = render(write.knob, *ev.written);
  ev.driftAt = clock_->wallNow();
  ++ev.drifts;
  ++stats_.drifted;
  KLOG_INFO << knobSpec(write.knob).name << " in " << quoteText(write.dir, 200) << " holds "
            << quoteText(text, 80) << ", not the " << ev.driftReplaced << " we wrote for "
            << own.name << ": changed behind our back, repairing";
  if (driftObserver_) driftObserver_(knobSpec(write.knob).name);
}

std::vector<KnobRecord> Executor::explain(std::string_view dir, bool below,
                                          std::optional<Knob> knob) const {
  std::vector<KnobRecord> out;
  const Clock::Monotonic now = clock_->now();
  for (const auto& [key, own] : owners_) {
    const std::string& d = key.first;
    if (knob && key.second != *knob) continue;
    const bool match =
        d == dir ||
        (below &&
         (dir.empty() || (d.size() > dir.size() && d.starts_with(dir) && d[dir.size()] == '/')));
    if (!match) continue;
    KnobRecord r;
    r.dir = d;
    r.knob = key.second;
    r.owner = own.name;
    if (own.lastAsked != Clock::Monotonic{}) r.asked = own.asked;
    r.why = own.why;
    if (const Events* ev = own.events.get()) {
      r.written = ev->written;
      r.writtenAt = ev->writtenAt;
      r.writtenDryRun = ev->writtenDryRun;
      r.drift = ev->drift;
      r.driftReplaced = ev->driftReplaced;
      r.driftAt = ev->driftAt;
      r.drifts = ev->drifts;
      if (ev->refusal && now - ev->refusedAt <= 2 * config_.forceUpdate) r.refusal = ev->refusal;
    }
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const KnobRecord& a, const KnobRecord& b) {
    return a.dir != b.dir ? a.dir < b.dir : a.knob < b.knob;
  });
  return out;
}

KnobValue Executor::aimedAt(Knob knob, KnobValue value) const {
  // The kernel keeps memory in pages and rounds a byte value down: aim at what it
  // will hold, so the file reads back equal and is not rewritten every round.
  if (isMemoryKnob(knob) && value.number > 0 && config_.pageSize > 0) {
    value.number -= value.number % config_.pageSize;
  }
  return value;
}

bool Executor::holds(Knob knob, const KnobValue& asked, std::string_view kernelText) const {
  const KnobValue target = aimedAt(knob, asked);
  if (knob == Knob::kCpuShares && layout_.version() == CgroupVersion::kV2) {
    return trimmed(kernelText) == render(knob, target);
  }
  // As the file reads (readNow's text is trimmed): with its newline.
  auto parsed = parseKnob(knob, layout_.version(), trimmed(kernelText) + "\n", weights_);
  return parsed && *parsed == target;
}

Result<std::string> Executor::readNow(const std::string& dir, Knob knob) const {
  const KnobSpec& spec = knobSpec(knob);
  const std::string path = cgroupFilePath(layout_, config_.cgroupRoot, dir, spec.file);
  if (!support_.has(knob) || path.empty()) {
    return makeError(std::string(spec.name) + " is not supported here");
  }
  auto text = readFile(path, kReadCap);
  if (!text) return text.error();
  return trimmed(*text);
}

std::optional<Executor::Pending> Executor::admit(const CgroupWrite& write, ExecutorStats& batch) {
  const KnobSpec& spec = knobSpec(write.knob);
  if (!insideKubepods(write.dir)) {
    refuse("outside_kubepods", batch);
    failures_->failure("executor refused " + write.dir, Severity::kWarning,
                       "refusing to write " + std::string(spec.name) + " in " +
                           quoteText(write.dir, 200) + " for " + write.owner + ": not under " +
                           layout_.kubeRootDir() + " nor a host application's cgroup");
    return std::nullopt;
  }
  const Clock::Monotonic start = clock_->now();
  // One owner per knob per cgroup: the first strategy to write it keeps it, so two
  // strategies cannot fight over a value write after write.
  auto owner = owners_.find(std::pair<std::string_view, Knob>(write.dir, write.knob));
  const bool inserted = owner == owners_.end();
  if (inserted) {
    owner = owners_.emplace(std::pair(write.dir, write.knob), Owner{}).first;
    owner->second.name = write.owner;
  }
  if (!inserted && owner->second.name != write.owner) {
    refuse("second_owner", batch);
    std::string message = std::string(spec.name) + " in " + write.dir + " belongs to " +
                          owner->second.name + ": refusing the write from " + write.owner;
    noteRefusal(owner->second, write, "second_owner", message);
    failures_->failure("executor owner " + write.dir + " " + spec.name, Severity::kWarning,
                       std::move(message));
    return std::nullopt;
  }
  Owner& own = owner->second;
  own.lastAsked = start;
  if (!(own.asked == write.value)) own.asked = write.value;
  if (write.why && own.why != write.why) own.why = write.why;
  // The value this owner last asked for, found equal to the file's text: while
  // that text is trusted (within `verify`) and no forced rewrite is due, the same
  // value is unchanged without a path, a render or a parse.
  if (start < own.sameUntil && own.same == write.value) {
    ++batch.unchanged;
    observe("unchanged", start);
    return std::nullopt;
  }
  own.sameUntil = {};  // past here the file may be written: the memo no longer holds
  // A value that cannot be right is refused, never clamped: a negative memory
  // limit made 0 kills the cgroup (v2 memory.max 0), a negative quota made the
  // minimum starves it.
  if (auto range = checkKnobRange(write.knob, write.value); !range) {
    refuse("out_of_range", batch);
    std::string message = "refusing to write " + range.error().message + " in " +
                          quoteText(write.dir, 200) + " for " + write.owner;
    noteRefusal(own, write, "out_of_range", message);
    failures_->failure("executor range " + write.dir + " " + spec.name, Severity::kWarning,
                       std::move(message));
    return std::nullopt;
  }
  std::string path = cgroupFilePath(layout_, config_.cgroupRoot, write.dir, spec.file);
  // No file on this cgroup version (memory.soft_limit_in_bytes on v2): unsupported,
  // whatever the support set says.
  if (!support_.has(write.knob) || path.empty()) {
    ++batch.unsupported;
    bool& logged = unsupportedLogged_[static_cast<size_t>(write.knob)];
    if (!logged) {
      logged = true;
      KLOG_INFO << spec.name << " is not supported by this kernel: its writes are skipped";
    }
    observe("unsupported", start);
    return std::nullopt;
  }
  // A cgroup directory found gone (see cgroupsMayHaveChanged), keyed by the file's
  // own directory: on v1 one hierarchy's dir gone says nothing of another's.
  if (!gone_.empty()) {
    if (auto g = gone_.find(parentDir(path)); g != gone_.end()) {
      if (start - g->second < config_.forceUpdate) {
        ++batch.skippedGone;
        owners_.erase(owner);
        return std::nullopt;
      }
      gone_.erase(g);  // tried again once a force period
    }
  }
  const KnobValue value = aimedAt(write.knob, write.value);
  Pending p{.write = &write,
            .path = std::move(path),
            .target = value,
            .text = renderKnob(write.knob, layout_.version(), value, weights_),
            .oldText = "",
            .current = std::nullopt,
            .depth = depthOf(write.dir)};
  // The file cannot be read: gone (the pod or container was deleted: normal), or failed.
  auto unreadable = [&](const Error& e) -> std::optional<Pending> {
    if (e.sysErrno == ENOENT) {
      ++batch.vanished;
      cache_.erase(p.path);
      owners_.erase({write.dir, write.knob});
      noteIfGone(p.path, start);
      observe("vanished", start);
    } else {
      ++batch.failed;
      failures_->failure(p.path, Severity::kWarning, "read before write: " + e.message);
      observe("failed", start);
    }
    return std::nullopt;
  };
  Clock::Monotonic knownAt{};
  bool wasRead = false;
  auto text = currentText(p.path, &knownAt, false, &wasRead);
  if (!text) return unreadable(text.error());
  p.oldText = trimmed(*text);
  // The file the write changes, as it is, with no fallback: an empty v2
  // cpuset.cpus (inherited) differs from every non-empty target, so the target is
  // written and the cgroup stops following its parent (cgroup_files.h).
  if (auto parsed = parseKnob(write.knob, layout_.version(), *text, weights_)) p.current = *parsed;
  // v2 weight -> shares does not invert exactly: compare what we would write.
  const bool textual = write.knob == Knob::kCpuShares && layout_.version() == CgroupVersion::kV2;
  bool equal = textual ? p.oldText == p.text : p.current && *p.current == value;
  // A write will follow: the file itself, not the known text, says what it holds,
  // so the order (shrink or grow), the audit's "old" and drift are the kernel's.
  // One read per changed file; the unchanged ones (nearly all) still cost none.
  if (!equal && !wasRead) {
    auto again = currentText(p.path, &knownAt, true);
    if (!again) return unreadable(again.error());
    p.oldText = trimmed(*again);
    p.current.reset();
    if (auto parsed = parseKnob(write.knob, layout_.version(), *again, weights_))
      p.current = *parsed;
    equal = textual ? p.oldText == p.text : p.current && *p.current == value;
  }
  // Drift: the file no longer holds what we wrote there (a dry run wrote nothing).
  // Looked for only when a write follows, the repair: a file that holds what its
  // owner asks now has nothing to repair, whoever put the value there.
  if (!equal && own.events && own.events->written && !own.events->writtenDryRun) {
    const KnobValue& ours = *own.events->written;
    const bool differs =
        textual ? p.oldText != render(write.knob, ours) : !p.current || !(*p.current == ours);
    if (differs) noteDrift(own, write, p.oldText);
  }
  if (equal) {
    Clock::Monotonic sameUntil = knownAt + config_.verify;
    // Only a CPU list is rewritten when equal (see "Forced rewrites" in executor.h).
    if (spec.cpuList) {
      const Clock::Monotonic now = clock_->now();
      auto it = cache_.find(p.path);
      if (it == cache_.end() || it->second.text != p.text) {
        // first seen equal: the forced-rewrite clock starts
        it = cache_.insert_or_assign(p.path, Cached{p.text, now}).first;
      } else if (now - it->second.at >= config_.forceUpdate) {
        return p;  // due for its forced rewrite
      }
      sameUntil = std::min(sameUntil, it->second.at + config_.forceUpdate);
    }
    if (config_.verify.count() > 0) {
      own.same = write.value;
      own.sameUntil = sameUntil;
    }
    ++batch.unchanged;
    observe("unchanged", start);
    return std::nullopt;
  }
  return p;
}

bool Executor::writeFile(const Pending& p, const std::string& text, const std::string& oldText,
                         ExecutorStats& batch) {
  const CgroupWrite& w = *p.write;
  const Clock::Monotonic start = clock_->now();
  if (config_.dryRun) {
    KLOG_INFO << "dry-run: would write " << text << " to " << p.path << " (was " << oldText
              << ") for " << w.owner;
    ++batch.written;
    noteWritten(p, text, true);
    audit(p, oldText, text);
    observe("succeeded", start);
    return true;
  }
  // cgroupfs files exist with their directory: no O_CREAT, so a vanished cgroup
  // is ENOENT rather than a stray file. The kernel ignores O_TRUNC on cgroupfs (a
  // shell's "echo 5 > cpu.shares" uses it) and it keeps a plain file, as in a test
  // tree, holding exactly the value. The trailing newline is what the shell
  // writes too; it also makes an empty CPU list a non-empty write, which a
  // zero-length write() would not deliver to the kernel.
  const std::string payload = text + "\n";
  int err = 0;
  const int fd = ::open(p.path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) {
    err = errno;
  } else {
    const ssize_t n = ::write(fd, payload.data(), payload.size());
    if (n < 0) {
      err = errno;
    } else if (static_cast<size_t>(n) != payload.size()) {
      err = EIO;
    }
    ::close(fd);
  }
  if (err == 0) {
    ++batch.written;
    // Only CPU lists have a forced rewrite to time (executor.h).
    if (knobSpec(w.knob).cpuList) cache_[p.path] = Cached{text, clock_->now()};
    know(p.path, payload);
    noteWritten(p, text, false);
    failures_->success(p.path);
    failures_->success(readOnlyKey());
    audit(p, oldText, text);
    observe("succeeded", start);
    return true;
  }
  known_.erase(p.path);  // whatever the file holds now, it is read again next time
  if (err == ENOENT) {
    ++batch.vanished;
    cache_.erase(p.path);
    owners_.erase({w.dir, w.knob});
    noteIfGone(p.path, clock_->now());
    observe("vanished", start);
    return false;
  }
  const char* status = "failed";
  // EINVAL and ERANGE are the kernel refusing the value itself (v2 cpu.weight and
  // cpuset.cpus answer out-of-range values with ERANGE): both are "invalid".
  if (err == EINVAL || err == ERANGE) {
    ++batch.invalid;
    status = "invalid";
  } else if (err == EACCES || err == EPERM) {
    ++batch.denied;
    status = "denied";
  } else {
    ++batch.failed;
    // EBUSY: the kernel cannot honour the value now (v1 cpuset.cpus a child still
    // uses, a memory limit under usage it cannot reclaim); EROFS: the hierarchy is
    // mounted read-only. Failed writes all the same, told apart in the metric.
    if (err == EBUSY) status = "busy";
    if (err == EROFS) status = "read_only";
  }
  cache_.erase(p.path);
  const std::string message = "write " + quoteText(text, 80) + " to " + p.path + " (was " +
                              quoteText(oldText, 80) + ") for " + w.owner + ": " +
                              std::strerror(err);
  if (err == EROFS) {
    // A read-only mount refuses every write under it: one streak for the whole
    // root, not one line per file (hundreds on a full node).
    failures_->failure(readOnlyKey(), Severity::kWarning,
                       message +
                           " (the cgroup hierarchy is read-only: every write is refused "
                           "and counted until it is writable)");
  } else {
    failures_->failure(p.path, Severity::kWarning, message);
  }
  observe(status, start);
  return false;
}

void Executor::noteWritten(const Pending& p, const std::string& text, bool dryRun) {
  auto it = owners_.find(std::pair<std::string_view, Knob>(p.write->dir, p.write->knob));
  if (it == owners_.end()) return;
  Events& ev = it->second.ev();
  // A CPU list's union step is what the file holds until the target's write lands
  // (which may fail: EBUSY), so it is what we wrote for now.
  if (text == p.text) {
    ev.written = p.target;
  } else if (auto parsed = parseKnob(p.write->knob, layout_.version(), text, weights_)) {
    ev.written = *parsed;
  } else {
    ev.written.reset();
  }
  ev.writtenAt = clock_->wallNow();
  ev.writtenDryRun = dryRun;
}

void Executor::audit(const Pending& p, const std::string& oldText, const std::string& newText) {
  if (config_.auditPath.empty()) return;
  nlohmann::json event = {{"ts", rfc3339Millis(clock_->wallNow())},
                          {"path", p.path},
                          {"old", oldText},
                          {"new", newText},
                          {"owner", p.write->owner},
                          {"dryRun", config_.dryRun}};
  // Replace invalid UTF-8 (a hostile file's text) instead of throwing.
  const std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const Status written = AuditLog(config_.auditPath, config_.auditMaxBytes).append(line);
  const std::string key = "executor audit " + config_.auditPath;
  if (written) {
    failures_->success(key);
  } else {
    failures_->failure(key, Severity::kWarning, written.error().message);
  }
}

void Executor::forgetUnder(std::string_view dir) {
  // "<dir>" and "<dir>/...", not "<dir>-x". A walk of every owner: this runs once
  // per pod that goes, the lookup it makes fast runs for every write.
  std::erase_if(owners_, [&](const auto& kv) {
    const std::string& d = kv.first.first;
    return d.starts_with(dir) && (d.size() == dir.size() || d[dir.size()] == '/');
  });
  // Gone dirs are file directories (<root>/<controller>/<dir>...): "/<dir>" at the end
  // or "/<dir>/" inside.
  std::string inner(1, '/');  // appended, not "/" + dir: g++ 12's false -Wrestrict
  inner.append(dir);
  std::string innerSlash = inner;
  innerSlash.push_back('/');
  std::erase_if(gone_, [&](const auto& kv) {
    const std::string& d = kv.first;
    return d.ends_with(inner) || d.find(innerSlash) != std::string::npos;
  });
}

// ENOENT on `path`: its cgroup directory is gone when the directory itself is absent
// (a file missing from a live directory is not a gone cgroup).
void Executor::noteIfGone(const std::string& path, Clock::Monotonic now) {
  const std::string dir(parentDir(path));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 && errno == ENOENT) gone_[dir] = now;
}

ExecutorStats Executor::apply(std::vector<CgroupWrite> writes) {
  ExecutorStats batch;
  std::vector<Pending> flat, hier;
  for (const CgroupWrite& w : writes) {
    auto p = admit(w, batch);
    if (!p) continue;
    (knobSpec(w.knob).hierarchical ? hier : flat).push_back(std::move(*p));
  }
  // Knobs no parent bounds: in the order asked, except that the kernel keeps a
  // cgroup's burst at most its own quota (v1 cpu.cfs_burst_us, v2 cpu.max.burst:
  // EINVAL otherwise). So a burst waits until after the quotas when its cgroup's
  // quota grows in this batch (raise quota, then burst), and goes first otherwise
  // (lower burst, then quota).
  std::set<std::string> quotaGrows;
  for (const Pending& p : hier) {
    if (p.write->knob != Knob::kCpuQuota) continue;
    if (!p.current || numberBelow(knobSpec(Knob::kCpuQuota), p.current->number, p.target.number)) {
      quotaGrows.insert(p.write->dir);
    }
  }
  std::vector<const Pending*> afterQuota;
  for (const Pending& p : flat) {
    if (p.write->knob == Knob::kCpuBurst && quotaGrows.contains(p.write->dir)) {
      afterQuota.push_back(&p);
    } else {
      writeFile(p, p.text, p.oldText, batch);
    }
  }

  // A parent bounds its children, so a decrease must reach the children before
  // the parent (else the kernel refuses the parent: EINVAL), and an increase the
  // parent before the children. A CPU list that is neither a subset nor a
  // superset grows to the union parent-first, then shrinks child-first; a CPU list
  // that only shrinks does so in that last pass too, after every list grew: a parent
  // shrinking under a child that moves within it (pod 0-1 -> 0, container 1 -> 0)
  // must wait for the child, or v1 and Linux 5.10's v2 refuse it (EBUSY; the rig's
  // 5.10 boot found it).
  std::vector<const Pending*> shrink, grow, listShrink;
  std::vector<std::pair<const Pending*, std::string>> unions;  // with the union written
  for (const Pending& p : hier) {
    const KnobSpec& spec = knobSpec(p.write->knob);
    if (!p.current) {
      grow.push_back(&p);  // unreadable value: nothing to order by
    } else if (spec.cpuList) {
      const std::vector<int>& target = p.target.cpus;
      const std::vector<int>& now = p.current->cpus;
      if (isSubset(now, target)) {
        grow.push_back(&p);
      } else if (isSubset(target, now)) {
        listShrink.push_back(&p);
      } else {
        unions.emplace_back(&p, renderKnob(p.write->knob, layout_.version(),
                                           KnobValue::ofCpus(unionOf(now, target)), weights_));
      }
    } else if (numberBelow(spec, p.target.number, p.current->number)) {
      shrink.push_back(&p);
    } else {
      grow.push_back(&p);
    }
  }
  auto deepestFirst = [](const Pending* a, const Pending* b) { return a->depth > b->depth; };
  std::stable_sort(shrink.begin(), shrink.end(), deepestFirst);
  for (const Pending* p : shrink) writeFile(*p, p->text, p->oldText, batch);

  // Pass 2: increases and unions, parents first.
  struct Step {
    const Pending* p;
    const std::string* text;
  };
  std::vector<Step> pass2;
  for (const Pending* p : grow) pass2.push_back({p, &p->text});
  for (const auto& [p, u] : unions) pass2.push_back({p, &u});
  std::stable_sort(pass2.begin(), pass2.end(),
                   [](const Step& a, const Step& b) { return a.p->depth < b.p->depth; });
  std::vector<const Pending*> pass3;
  for (const Step& s : pass2) {
    const bool ok = writeFile(*s.p, *s.text, s.p->oldText, batch);
    if (s.text != &s.p->text && ok) pass3.push_back(s.p);
  }
  // Pass 3: the union-grown lists and the shrinking ones to their targets, children first.
  pass3.insert(pass3.end(), listShrink.begin(), listShrink.end());
  std::stable_sort(pass3.begin(), pass3.end(), deepestFirst);
  for (const Pending* p : pass3) {
    const auto it =
        std::find_if(unions.begin(), unions.end(), [p](const auto& u) { return u.first == p; });
    writeFile(*p, p->text, it == unions.end() ? p->oldText : it->second, batch);
  }

  for (const Pending* p : afterQuota) writeFile(*p, p->text, p->oldText, batch);

  // Forget cache entries nobody refreshed for two force periods (cgroups deleted
  // between applies), so the cache stays bounded by the live cgroups. Once a
  // second at most: the strategies apply several batches a round, and each sweep
  // walks every entry.
  const Clock::Monotonic now = clock_->now();
  if (swept_ && now - *swept_ < std::chrono::seconds(1)) {
    stats_ += batch;
    return batch;
  }
  swept_ = now;
  std::erase_if(cache_,
                [&](const auto& kv) { return now - kv.second.at > 2 * config_.forceUpdate; });
  // Owners likewise: an entry nobody asked for in two force periods is a pod that
  // went, or a knob its strategy has stopped asking for (see qos_manager.h), and the
  // map stays bounded by the live cgroups under churn.
  std::erase_if(
      owners_, [&](const auto& kv) { return now - kv.second.lastAsked > 2 * config_.forceUpdate; });
  // Known texts past `verify` would be read again anyway.
  std::erase_if(known_, [&](const auto& kv) { return now - kv.second.at >= config_.verify; });
  std::erase_if(gone_, [&](const auto& kv) { return now - kv.second >= config_.forceUpdate; });

  stats_ += batch;
  return batch;
}

}  // namespace koord
