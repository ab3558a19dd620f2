// ReportSchedule: when the node's NodeMetric status is reported, decided on the
// injected clock (ClusterLink arms its timer for due() and tells it what happened).
// Pure: no I/O, no timer.
//
// koordlet reports on a ticker of the NodeMetric's reportIntervalSeconds; the rules:
// - The object appearing (first seen, or created again: a new metadata.uid) is due
//   at once. Its other changes (our own status updates, spec edits, a re-list after
//   the API server came back, which carries the same uid) make nothing due: a new
//   interval in the spec applies from the next report.
// - Each tick is followed by the next one interval later, timed from the tick, not
//   from the report's answer: a slow, failing or absent API server neither shifts
//   nor bunches reports, and when it comes back the next tick reports (no catch-up
//   burst). A report still in flight at its tick spends that tick. A tick handled
//   late (the loop held) moves the next one with it.
// - A 409 is retried inside the report (kube/status_reporter.h): it moves nothing.
// - Nothing sampled yet (a status without node usage would read as zero to
//   koord-manager): tried again after min(interval, kNoUsageRetry). Reports do not
//   wait for the aggregate window to fill: the status says what the cache holds.
// - The object gone: nothing due until it appears again.
// So, with the object present, two reports are never closer than the interval,
// except the first after the object appears (at once, after at most kNoUsageRetry
// waits for usage).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "base/clock.h"

namespace koord {

class ReportSchedule {
 public:
  static constexpr std::chrono::seconds kNoUsageRetry{5};

  enum class Tick {
    kSent,      // a report started (its answer comes later, whatever it is)
    kInFlight,  // the last report is still waiting for its answer: this tick is spent
    kNoUsage,   // nothing sampled yet: not sent
    kNoStatus,  // the status could not be built (a bad spec): not sent, said elsewhere
  };

  // What the informer shows of the object: its uid, or nullopt when there is none.
  // Returns true when this makes a report due now (the object appeared).
  bool observe(const std::optional<std::string>& uid, Clock::Monotonic now);

  // When the next report is due; nullopt while there is no object.
  std::optional<Clock::Monotonic> due() const { return due_; }
  bool isDue(Clock::Monotonic now) const { return due_ && *due_ <= now; }

  // The due report's tick at `now`, with the interval the object's spec asks for.
  void ticked(Tick tick, std::chrono::nanoseconds interval, Clock::Monotonic now);

 private:
  std::optional<std::string> uid_;
  std::optional<Clock::Monotonic> due_;
};

}  // namespace koord
