#include "resctrl/resctrl_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "base/read_file.h"
#include "base/text_scan.h"

namespace koord::resctrl {
namespace {

// Memory bandwidth resources (Intel/AMD MB, AMD SMBA) hold decimal percents or
// MBps; every other resource (L3, L3CODE, L3DATA, L2, L2CODE, L2DATA) a hex bitmask.
bool decimalResource(std::string_view name) { return name == "MB" || name == "SMBA"; }

// The value of one schemata domain as a number: hex for masks (the kernel zero-pads
// them: "00f"), decimal for bandwidth (the kernel pads with blanks, trimmed by
// parseSchemata). nullopt when it is neither.
std::optional<uint64_t> domainValue(std::string_view resource, std::string_view value) {
  uint64_t v = 0;
  if (decimalResource(resource)) {
    if (text::toU64(value, v) != nullptr) return std::nullopt;
    return v;
  }
  if (value.empty()) return std::nullopt;
  // Leading zeros do not count towards the 64-bit limit.
  while (value.size() > 1 && value.front() == '0') value.remove_prefix(1);
  if (value.size() > 16) return std::nullopt;
  for (char c : value) {
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return std::nullopt;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

std::string errnoText(int err) { return std::strerror(err); }

// Group names we accept from a plan: one plain dir name below the root, never the
// root itself ("" or ".").
bool plainGroupName(std::string_view g) {
  return !g.empty() && g != "." && g != ".." && g.find('/') == std::string_view::npos;
}

}  // namespace

WriterStats& WriterStats::operator+=(const WriterStats& o) {
  groupsCreated += o.groupsCreated;
  groupsRefused += o.groupsRefused;
  groupsFailed += o.groupsFailed;
  schemataWritten += o.schemataWritten;
  schemataUnchanged += o.schemataUnchanged;
  schemataFailed += o.schemataFailed;
  tasksWritten += o.tasksWritten;
  tasksUnchanged += o.tasksUnchanged;
  tasksVanished += o.tasksVanished;
  tasksFailed += o.tasksFailed;
  return *this;
}

ResctrlFileOps systemResctrlFileOps() {
  ResctrlFileOps ops;
  ops.write = [](const std::string& path, std::string_view data, WriteMode mode) -> int {
    const int flags = O_WRONLY | O_CLOEXEC | (mode == WriteMode::kTasks ? O_APPEND : 0);
    const int fd = ::open(path.c_str(), flags);
    if (fd < 0) return errno;
    ssize_t n = 0;
    do {
      n = ::write(fd, data.data(), data.size());
    } while (n < 0 && errno == EINTR);
    // resctrl takes a write whole or refuses it; a short count would be a regular file
    // out of space, reported as EIO rather than retried as a second write().
    const int err = n < 0 ? errno : (static_cast<size_t>(n) != data.size() ? EIO : 0);
    ::close(fd);
    return err;
  };
  ops.makeDir = [](const std::string& path) -> int {
    return ::mkdir(path.c_str(), 0755) == 0 ? 0 : errno;
  };
  return ops;
}

Result<bool> schemataLineHeld(const std::vector<SchemataResource>& current, std::string_view line) {
  auto parsed = parseSchemata(line, "planned schemata line");
  if (!parsed) return parsed.error();
  if (parsed->size() != 1) {
    return makeError(text::cat("planned schemata line \"", line, "\" is not one resource line"));
  }
  const SchemataResource& want = parsed->front();
  const SchemataResource* have = findResource(current, want.name);
  if (have == nullptr) return false;
  for (const SchemataDomain& d : want.domains) {
    const auto wantValue = domainValue(want.name, d.value);
    if (!wantValue) {
      return makeError(text::cat("planned schemata line \"", line, "\": value \"", d.value,
                                 "\" is not a number"));
    }
    auto it = std::find_if(have->domains.begin(), have->domains.end(),
                           [&](const SchemataDomain& h) { return h.id == d.id; });
    if (it == have->domains.end()) return false;
    // A current value we cannot read as a number is not held: writing it lets the kernel
    // say what it thinks of it.
    const auto haveValue = domainValue(want.name, it->value);
    if (!haveValue || *haveValue != *wantValue) return false;
  }
  return true;
}

ResctrlWriter::ResctrlWriter(std::string resctrlRoot, GroupOwnership& ownership,
                             FailureLog& failures, bool dryRun, ResctrlFileOps ops)
    : root_(std::move(resctrlRoot)),
      ownership_(&ownership),
      failures_(&failures),
      dryRun_(dryRun),
      ops_(std::move(ops)) {}

WriterStats ResctrlWriter::apply(const ResctrlPlan& plan) {
  WriterStats stats;
  for (const GroupPlan& g : plan.groups) {
    const std::string key = "resctrl " + g.group;
    if (!plainGroupName(g.group)) {
      // The root group holds every unclassified task: never ours to change.
      failures_->failure(key + " name", Severity::kError,
                         "resctrl: refusing group \"" + g.group + "\": not one dir below the root");
      ++stats.groupsRefused;
      continue;
    }
    const std::string dir = root_ + "/" + g.group;
    std::error_code ec;
    const bool exists = std::filesystem::is_directory(dir, ec);
    const bool allowed =
        dryRun_ ? ownership_->wouldUse(g.group, exists) : ownership_->mayUse(g.group, exists);
    if (!allowed) {
      ++stats.groupsRefused;
      failures_->failure(key + " foreign", Severity::kWarning,
                         "resctrl: " + dir +
                             " exists and was not created by this agent; left alone "
                             "(--resctrl-adopt-groups takes such groups over)");
      continue;
    }
    if (!exists) {
      if (dryRun_) {
        KLOG_INFO << "dry-run: would create resctrl group " << dir;
        if (g.schemataKnown) {
          for (const auto& line : g.schemata) {
            KLOG_INFO << "dry-run: would write \"" << line << "\" to " << dir << "/schemata";
          }
        }
        if (!g.tids.empty()) {
          KLOG_INFO << "dry-run: would write " << g.tids.size() << " tids to " << dir << "/tasks";
        }
        continue;
      }
      if (const int err = ops_.makeDir(dir); err != 0) {
        ++stats.groupsFailed;
        failures_->failure(key + " mkdir", Severity::kWarning,
                           "resctrl: mkdir " + dir + ": " + errnoText(err));
        continue;
      }
      failures_->success(key + " mkdir");
      ++stats.groupsCreated;
      if (auto st = ownership_->created(g.group); !st) {
        failures_->failure(
            "resctrl ownership record", Severity::kWarning,
            "resctrl: created " + dir + " but could not record it: " + st.error().message);
      } else {
        failures_->success("resctrl ownership record");
      }
    }
    if (g.schemataKnown) applySchemata(g, dir, stats);
    applyTasks(g, dir, stats);
  }
  return stats;
}

void ResctrlWriter::applySchemata(const GroupPlan& g, const std::string& dir, WriterStats& stats) {
  if (g.schemata.empty()) return;
  const std::string path = dir + "/schemata";
  const std::string readKey = "resctrl " + g.group + " schemata";
  auto text = readFile(path);
  if (!text) {
    ++stats.schemataFailed;
    failures_->failure(readKey, Severity::kWarning,
                       "resctrl: " + inFile(path, text.error()).message + "; schemata not written");
    return;
  }
  auto current = parseSchemata(*text, path);
  if (!current) {
    ++stats.schemataFailed;
    failures_->failure(readKey, Severity::kWarning,
                       "resctrl: " + current.error().message + "; schemata not written");
    return;
  }
  failures_->success(readKey);
  for (const std::string& line : g.schemata) {
    const std::string resource = line.substr(0, line.find(':'));
    const std::string key = "resctrl " + g.group + " schemata " + resource;
    auto held = schemataLineHeld(*current, line);
    if (!held) {
      ++stats.schemataFailed;
      failures_->failure(key, Severity::kError, "resctrl: " + held.error().message);
      continue;
    }
    if (*held) {
      ++stats.schemataUnchanged;
      continue;
    }
    if (dryRun_) {
      KLOG_INFO << "dry-run: would write \"" << line << "\" to " << path;
      continue;
    }
    // One resource per write: the kernel rejects a whole write for one bad domain,
    // so a bad MB value must not keep the L3 line from being applied.
    if (const int err = ops_.write(path, line + "\n", WriteMode::kSchemata); err != 0) {
      ++stats.schemataFailed;
      const std::string statusPath = root_ + "/info/last_cmd_status";
      auto status = readFile(statusPath);
      const std::string why =
          status ? std::string(text::trim(*status)) : "(" + status.error().message + ")";
      failures_->failure(key, Severity::kWarning,
                         text::cat("resctrl: writing \"", line, "\" to ", path, ": ",
                                   errnoText(err), "; last_cmd_status: ", why));
      continue;
    }
    ++stats.schemataWritten;
    failures_->success(key);
  }
}

void ResctrlWriter::applyTasks(const GroupPlan& g, const std::string& dir, WriterStats& stats) {
  if (g.tids.empty()) return;
  const std::string path = dir + "/tasks";
  const std::string key = "resctrl " + g.group + " tasks";
  auto text = readFile(path);
  if (!text) {
    ++stats.tasksFailed;
    failures_->failure(key + " read", Severity::kWarning,
                       "resctrl: " + inFile(path, text.error()).message + "; tasks not written");
    return;
  }
  auto current = parseTids(*text, path);
  if (!current) {
    ++stats.tasksFailed;
    failures_->failure(key + " read", Severity::kWarning,
                       "resctrl: " + current.error().message + "; tasks not written");
    return;
  }
  failures_->success(key + " read");
  const std::set<int32_t> there(current->begin(), current->end());
  std::vector<int32_t> missing;
  for (int32_t tid : g.tids) {
    if (there.count(tid) != 0) {
      ++stats.tasksUnchanged;
    } else {
      missing.push_back(tid);
    }
  }
  if (missing.empty()) return;
  if (dryRun_) {
    KLOG_INFO << "dry-run: would write " << missing.size() << " tids to " << path << " (first "
              << missing.front() << ")";
    return;
  }
  uint64_t failed = 0;
  int firstErr = 0;
  int32_t firstTid = 0;
  for (int32_t tid : missing) {
    // The kernel takes one tid per write().
    const int err = ops_.write(path, std::to_string(tid) + "\n", WriteMode::kTasks);
    if (err == 0) {
      ++stats.tasksWritten;
    } else if (err == ESRCH) {
      ++stats.tasksVanished;  // exited since it was listed: normal
    } else {
      ++stats.tasksFailed;
      if (failed++ == 0) {
        firstErr = err;
        firstTid = tid;
      }
    }
  }
  if (failed != 0) {
    failures_->failure(
        key, Severity::kWarning,
        text::cat("resctrl: ", std::to_string(failed), " of ", std::to_string(missing.size()),
                  " tids not moved to ", path, "; first: tid ", std::to_string(firstTid), ": ",
                  errnoText(firstErr)));
  } else {
    failures_->success(key);
  }
}

}  // namespace koord::resctrl
