#include "base/log.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <iostream>

#include "base/text_scan.h"

namespace koord {
namespace {

const SystemClock kSystemClock;

std::unique_ptr<Logger>& globalSlot() {
  static std::unique_ptr<Logger> logger = std::make_unique<Logger>(std::cerr, kSystemClock, 0);
  return logger;
}

char severityLetter(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return 'I';
    case Severity::kWarning:
      return 'W';
    case Severity::kError:
      return 'E';
    case Severity::kFatal:
      return 'F';
  }
  return '?';
}

std::string_view baseName(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

Logger& Logger::global() { return *globalSlot(); }

void Logger::setGlobal(std::ostream& out, const Clock& clock, int verbosity) {
  globalSlot() = std::make_unique<Logger>(out, clock, verbosity);
}

void Logger::write(Severity sev, std::string_view file, int line, std::string_view msg) {
  auto wall = clock_->wallNow();
  auto secs = std::chrono::system_clock::to_time_t(wall);
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(wall.time_since_epoch()) %
                std::chrono::seconds(1);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char head[64];
  std::snprintf(head, sizeof head, "%c%02d%02d %02d:%02d:%02d.%06ld %7d ", severityLetter(sev),
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long>(micros.count()), static_cast<int>(::getpid()));
  std::string out(head);
  out.append(baseName(file));
  out.push_back(':');
  out.append(std::to_string(line));
  out.append("] ");
  out.reserve(out.size() + msg.size() + 1);
  for (char c : msg) {
    if (c == '\n') {
      out.append("\\n");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\n');
  std::lock_guard<std::mutex> lock(mu_);
  out_->write(out.data(), static_cast<std::streamsize>(out.size()));
  out_->flush();
}

void logEachLine(Severity sev, std::string_view prefix, std::string_view lines, const char* file,
                 int line) {
  text::Split split(lines, '\n');
  for (std::string_view one; split.next(one);) {
    if (one.empty()) continue;
    std::string msg(prefix);
    msg.append(one);
    Logger::global().write(sev, file, line, msg);
  }
}

std::string prefixEachLine(std::string_view prefix, std::string_view lines) {
  std::string out(prefix);
  for (char c : lines) {
    out.push_back(c);
    if (c == '\n') out.append(prefix);
  }
  return out;
}

void FailureLog::expireIdle(Clock::Monotonic now) {
  // A sweep is O(keys): at most ten per reminder interval.
  if (now - lastExpiry_ < reminderEvery_ / 10) return;
  lastExpiry_ = now;
  std::erase_if(streaks_,
                [&](const auto& kv) { return now - kv.second.lastFailure > 2 * reminderEvery_; });
}

bool FailureLog::failure(std::string_view key, Severity sev, std::string_view message,
                         const char* file, int line) {
  auto now = clock_->now();
  expireIdle(now);
  auto it = streaks_.find(key);
  if (it == streaks_.end()) {
    if (streaks_.size() >= maxKeys_) {
      key = "(other keys)";
      it = streaks_.find(key);
    }
  }
  if (it != streaks_.end()) it->second.lastFailure = now;
  if (it == streaks_.end()) {
    Streak s;
    s.count = 1;
    s.lastLine = now;
    s.lastFailure = now;
    streaks_.emplace(std::string(key), s);
    Logger::global().write(sev, file, line, message);
    return true;
  }
  Streak& s = it->second;
  ++s.count;
  ++s.sinceReminder;
  if (now - s.lastLine >= reminderEvery_) {
    std::ostringstream os;
    os << message << " (failing for " << s.count << " attempts, " << s.sinceReminder
       << " since last report)";
    s.sinceReminder = 0;
    s.lastLine = now;
    Logger::global().write(sev, file, line, os.str());
    return true;
  }
  ++suppressed_;
  return false;
}

bool FailureLog::success(std::string_view key, const char* file, int line) {
  auto it = streaks_.find(key);
  if (it == streaks_.end()) return false;
  std::ostringstream os;
  os << key << ": recovered after " << it->second.count << " failed attempts";
  streaks_.erase(it);
  Logger::global().write(Severity::kInfo, file, line, os.str());
  return true;
}

}  // namespace koord
