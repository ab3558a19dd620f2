// End-to-end CPU suppress (policy cfsQuota, reference koordlet.md §4.1) on this
// machine's real cgroup v1 kernel: the real koordlet binary, a kubelet stand-in
// serving two pods derived from a real capture, and real processes burning CPU in
// their container cgroups (tests/support/suppress_node.h). The BE burner is always
// busy; the LS burner goes idle -> one core busy -> idle. The test reads what an
// operator can read: the kernel's besteffort cpu.cfs_quota_us, the agent's
// /metrics and its audit log, and checks
//   (a) LS idle: the quota settles at capacity x 65% minus system usage;
//   (b) LS busy: it shrinks at once to that minus the LS core (or the 2000 floor),
//       the exported suppress cores are the file's value, and the kernel holds BE
//       to it;
//   (c) LS idle again: it grows back by at most 10% of capacity per round;
//   (d) suppress disabled in the --config file: the quota is lifted (-1) once.
// Every write in the audit log must have been kept by the kernel: each write's
// "old" is the previous write's "new", and the file holds the last one.
//
// The suppress formula is evaluated by the test from the inputs the agent
// exported in the same round (LS, BE and node usage), so the checks are exact
// however loaded the machine is; only the waits depend on load, and every wait is
// a poll with a deadline wide enough for a loaded 2-core machine.
#include <sys/wait.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/exposition.h"
#include "tests/support/poll.h"
#include "tests/support/promtool.h"
#include "tests/support/skip.h"
#include "tests/support/suppress_node.h"

namespace test_e2e_suppress_kernel {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::test::describe;
using koord::test::Labels;
using koord::test::QuotaWrite;
using koord::test::Scrape;
using koord::test::SuppressNode;
using koord::test::waitFor;
using namespace std::chrono_literals;

constexpr int kThresholdPercent = 65;
constexpr int64_t kPeriodUs = 100000;  // cpu.cfs_period_us: the kernel's default
constexpr int64_t kFloorUs = 2000;     // suppress never gives BE less
// The executor writes only changes of at least 1% of capacity (2000 on 2 CPUs):
// a settled quota may sit that far from this round's target.
constexpr double kDeadBandCores = 0.01;

// One consistent look at the node: the kernel's quota file, read before and
// after a scrape of /metrics and unchanged between the two, so the file and the
// gauges belong to the same suppress round (the agent runs its rounds and serves
// /metrics on one thread).
struct Look {
  int64_t quota = 0;
  // koordlet_be_suppress_cpu_cores{type="cfsQuota"}. The agent exports it for
  // rounds that wrote the quota and drops it for rounds that left the file alone
  // (change within the 1% dead band), so it may be absent while suppress runs.
  std::optional<double> suppressCores;
  double lsUsed = 0;    // koordlet_be_suppress_ls_used_cpu_cores
  double beUsed = 0;    // koordlet_be_suppress_be_used_cpu_cores
  double nodeUsed = 0;  // koordlet_node_used_cpu_cores
  Scrape metrics{""};

  double systemUsed() const { return std::max(nodeUsed - lsUsed - beUsed, 0.0); }
  // The quota suppress aims at from this round's inputs, before the growth cap:
  // max((capacity x threshold% - LS - system) x period, floor).
  int64_t target(int cpus) const {
    const double cores = cpus * kThresholdPercent / 100.0 - lsUsed - systemUsed();
    return std::max(static_cast<int64_t>(std::llround(cores * kPeriodUs)), kFloorUs);
  }
  std::string str(int cpus) const {
    std::ostringstream out;
    out << "quota file " << quota << ", exported suppress " << describe(suppressCores)
        << " cores, LS used " << lsUsed << ", BE used " << beUsed << ", node used " << nodeUsed
        << " (system " << systemUsed() << "), target " << target(cpus);
    return out.str();
  }
};

// Whether the exported suppress cores are the file's value (within the gauge's
// float rounding); true when the gauge is absent.
bool gaugeIsFile(const Look& l) {
  return !l.suppressCores || std::llabs(l.quota - std::llround(*l.suppressCores * kPeriodUs)) <= 1;
}

// Fills `look`; "" or why it could not (yet).
std::string lookAt(SuppressNode& node, Look& look) {
  const auto before = node.beQuota();
  auto metrics = node.scrape();
  const auto after = node.beQuota();
  if (!before || !after) return "besteffort cpu.cfs_quota_us unreadable";
  if (*before != *after) return "the quota changed during the scrape";
  if (!metrics) return "/metrics: no 200 reply";
  const Labels onNode{{"node", SuppressNode::kNodeName}};
  auto suppress = metrics->value("koordlet_be_suppress_cpu_cores",
                                 {{"node", SuppressNode::kNodeName}, {"type", "cfsQuota"}});
  auto ls = metrics->value("koordlet_be_suppress_ls_used_cpu_cores", onNode);
  auto be = metrics->value("koordlet_be_suppress_be_used_cpu_cores", onNode);
  auto used = metrics->value("koordlet_node_used_cpu_cores", onNode);
  if (!ls || !be || !used) {
    return "suppress series not exported yet: LS used " + describe(ls) + ", BE used " +
           describe(be) + ", node used " + describe(used);
  }
  look.quota = *after;
  look.suppressCores = suppress;
  look.lsUsed = *ls;
  look.beUsed = *be;
  look.nodeUsed = *used;
  look.metrics = std::move(*metrics);
  return "";
}

std::string describeWrites(const std::vector<QuotaWrite>& writes, size_t from = 0) {
  std::ostringstream out;
  for (size_t i = from; i < writes.size(); ++i) {
    out << "  " << writes[i].ts << " " << writes[i].oldValue << " -> " << writes[i].newValue
        << "\n";
  }
  return out.str();
}

// The last lines of the agent's log, without the kubelet client's line per sync
// (--v=4 logs one a second), enough to see what the agent did last.
std::string tail(const std::string& log, size_t lines) {
  std::vector<std::string> kept;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("kubelet_client.cpp") == std::string::npos) kept.push_back(line);
  }
  std::string out;
  for (size_t i = kept.size() > lines ? kept.size() - lines : 0; i < kept.size(); ++i) {
    out += kept[i] + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE(
    "cpu suppress on the real kernel shrinks the besteffort quota when an LS pod gets busy, "
    "grows it back by at most 10% of capacity a round, and lifts it when disabled",
    "[kernel]") {
  if (const std::string why = SuppressNode::unavailableReason(); !why.empty()) {
    KOORDLET_SKIP(why);
  }
  const char* agentBinary = std::getenv("KOORDLET_BIN");
  if (agentBinary == nullptr || *agentBinary == '\0') {
    FAIL("KOORDLET_BIN is not set (tests/e2e/meson.build sets it to the koordlet binary)");
  }
  const auto testStart = std::chrono::steady_clock::now();

  // --v=4: the agent logs each suppress round, which a failure message shows.
  SuppressNode node({agentBinary, "1s", 1, kThresholdPercent, {"--v=4"}});
  const int cpus = node.cpus();
  const int64_t stepUs = std::llround(cpus * 0.1 * kPeriodUs);  // growth cap per round
  const int64_t deadBandUs = std::llround(cpus * kDeadBandCores * kPeriodUs);
  const int64_t capUs = static_cast<int64_t>(cpus) * kThresholdPercent * kPeriodUs / 100;

  auto failWith = [&](const std::string& phase, const std::string& why) {
    FAIL(phase << ": " << why << "\n--- quota writes (audit log) ---\n"
               << describeWrites(node.quotaWrites()) << "--- agent log (tail) ---\n"
               << tail(node.agent().log(), 60));
  };
  if (const std::string why = node.waitReady(30s); !why.empty()) failWith("agent start", why);

  // Waits until `settled` holds for a consistent look; returns that look. Every
  // look with the cfsQuota gauge must show the file's value.
  Look look;
  int looks = 0;
  int looksWithGauge = 0;
  std::vector<std::string> gaugeMismatches;
  auto waitSettled = [&](const std::string& phase, std::chrono::seconds limit,
                         const std::function<std::string(const Look&)>& settled) {
    const std::string why = waitFor(limit, [&]() -> std::string {
      if (!node.agent().running()) failWith(phase, "the agent exited");
      if (std::string s = lookAt(node, look); !s.empty()) return s;
      ++looks;
      looksWithGauge += look.suppressCores.has_value();
      if (!gaugeIsFile(look)) gaugeMismatches.push_back(phase + ": " + look.str(cpus));
      if (std::string s = settled(look); !s.empty()) return s + "; " + look.str(cpus);
      return "";
    });
    if (!why.empty()) failWith(phase, why);
    return look;
  };
  // At the target of this round, within the executor's dead band.
  auto atTarget = [&](const Look& l) -> std::string {
    if (std::llabs(l.quota - l.target(cpus)) > deadBandUs) return "quota not at the target";
    return "";
  };

  // (a) LS idle: capacity x 65% minus what the system uses. (The first round has
  // no pod rates yet, so it counts BE's usage as the system's and writes the
  // floor; from there the quota grows by the capped step.) Everything outside the
  // two pods is "system": a machine busy with other work leaves BE little, and
  // the test needs room to show a shrink, so it waits for system < ~0.9 cores.
  const Look idle = waitSettled("(a) LS idle", 60s, [&](const Look& l) -> std::string {
    if (l.beUsed < 0.05) return "BE usage not measured yet";
    if (l.lsUsed > 0.1) return "LS still busy";
    if (std::string s = atTarget(l); !s.empty()) return s;
    if (l.quota < kFloorUs + 40000) {
      return "idle quota too close to the floor to show a shrink: the machine is busy "
             "with other work (system usage)";
    }
    return "";
  });
  CHECK(idle.quota <= capUs);
  CHECK(idle.beUsed > 0.2);  // the BE burner runs, under a quota it does not reach
  // "Well below": the LS core takes 100000 off the target; on a machine so loaded
  // that the idle quota is small, half the way to the floor.
  const int64_t margin = std::min<int64_t>(40000, (idle.quota - kFloorUs) / 2);

  // (b) LS busy at one core: the quota shrinks at once to (capacity x 65% - LS -
  // system) or the floor, well below the idle value.
  node.setLsBusy(true);
  const Look busy = waitSettled("(b) LS busy", 30s, [&](const Look& l) -> std::string {
    if (l.lsUsed < 0.6) return "LS not seen busy yet";
    if (l.quota > idle.quota - margin) return "quota not yet well below the idle value";
    // The shrink is a write, so its round exports the suppress cores.
    if (!l.suppressCores) return "no cfsQuota gauge in this round";
    return atTarget(l);
  });
  // The exported suppress cores are what the kernel holds.
  REQUIRE(busy.suppressCores.has_value());
  CHECK(std::llround(*busy.suppressCores * kPeriodUs) == busy.quota);
  CHECK(busy.quota >= kFloorUs);
  // The kernel holds BE to the quota: once a whole collection interval ran under
  // it, BE's measured usage is no more than it.
  waitSettled("(b) BE held to the quota", 15s, [&](const Look& l) -> std::string {
    if (l.beUsed > static_cast<double>(l.quota) / kPeriodUs + 0.1) return "BE above its quota";
    if (l.quota > idle.quota - margin) return "quota grew back";
    return "";
  });

  // (c) LS idle again: the quota grows back, by at most 10% of capacity a round
  // (checked below for every write of the run).
  const size_t writesBeforeRecovery = node.quotaWrites().size();
  node.setLsBusy(false);
  const Look recovered = waitSettled("(c) LS idle again", 90s, [&](const Look& l) -> std::string {
    if (l.lsUsed > 0.1) return "LS still busy";
    if (l.quota < busy.quota + margin) return "quota not recovered yet";
    return atTarget(l);
  });
  {
    const auto writes = node.quotaWrites();
    INFO("quota writes during recovery:\n" << describeWrites(writes, writesBeforeRecovery));
    int growths = 0;
    int capped = 0;
    for (size_t i = writesBeforeRecovery; i < writes.size(); ++i) {
      const QuotaWrite& w = writes[i];
      if (w.oldValue == -1 || w.newValue <= w.oldValue) continue;
      ++growths;
      capped += w.newValue - w.oldValue == stepUs;
    }
    CHECK(growths >= 1);
    // A climb of more than two steps takes at least one full step: the cap is
    // what holds it back, not the target.
    if (recovered.quota - busy.quota > 2 * stepUs) CHECK(capped >= 1);
  }

  // (d) Suppress disabled in the config file: the quota is lifted, once.
  node.setSuppressEnabled(false);
  {
    const std::string why = waitFor(20s, [&]() -> std::string {
      if (!node.agent().running()) failWith("(d) disabled", "the agent exited");
      const auto quota = node.beQuota();
      const auto writes = node.quotaWrites();
      if (quota != -1) return "besteffort quota is " + describe(quota) + ", want -1";
      if (writes.empty() || writes.back().newValue != -1) return "no audit line for the -1";
      return "";
    });
    if (!why.empty()) failWith("(d) disabled", why);
  }
  {
    // Recovered once, then left alone: three more rounds write nothing.
    const size_t writes = node.quotaWrites().size();
    std::this_thread::sleep_for(3s);
    CHECK(node.quotaWrites().size() == writes);
    CHECK(node.beQuota() == -1);
  }

  // Whenever the agent exported the suppress cores, they were the file's value.
  INFO("looks where the exported suppress cores differed from the file:\n"
       << [&] {
            std::string all;
            for (const std::string& m : gaugeMismatches) all += "  " + m + "\n";
            return all;
          }());
  CHECK(gaugeMismatches.empty());

  // Every write was kept by the kernel: the next write found what the previous
  // one wrote (nothing else writes this file), and the file holds the last one.
  // No write was below the floor, none grew a limited quota by more than 10% of
  // capacity (in (a) and (c) alike), and none was refused.
  const auto writes = node.quotaWrites();
  INFO("all quota writes:\n" << describeWrites(writes));
  REQUIRE(writes.size() >= 4);
  CHECK(writes.front().oldValue == -1);
  for (size_t i = 0; i < writes.size(); ++i) {
    const QuotaWrite& w = writes[i];
    INFO("write " << i << ": " << w.oldValue << " -> " << w.newValue);
    CHECK((w.newValue == -1 || w.newValue >= kFloorUs));
    if (w.oldValue != -1 && w.newValue != -1) CHECK(w.newValue - w.oldValue <= stepUs);
    if (i > 0) CHECK(w.oldValue == writes[i - 1].newValue);
  }
  CHECK(node.beQuota() == writes.back().newValue);
  const auto metrics = node.scrape();
  REQUIRE(metrics.has_value());
  for (const char* status : {"invalid", "denied", "failed"}) {
    INFO("executor writes with status " << status);
    CHECK(
        metrics->value("koordlet_resource_update_duration_milliseconds_count", {{"status", status}})
            .value_or(0) == 0);
  }

  // The exposition with the QoS metrics in it is lint-clean, but for koordlet's own
  // names (…_milliseconds, …_us), which win where they clash.
  CHECK(metrics->text().find("koordlet_resource_update_duration_milliseconds_bucket") !=
        std::string::npos);
  const auto lint = koord::test::promtoolCheck(metrics->text());
  if (!lint.ran) KOORDLET_SKIP("promtool not installed (Debian package prometheus)");
  INFO("promtool check metrics said:\n" << lint.output);
  CHECK(lint.problems.empty());

  // SIGTERM: exit 0, no error line, no sanitizer report.
  const auto status = node.agent().terminate(5000ms);
  const std::string log = node.agent().log();
  INFO("--- agent log (tail) ---\n" << tail(log, 80));
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 0);
  CHECK(log.find("runtime error:") == std::string::npos);
  std::string errorLines;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("E")) errorLines += line + "\n";
  }
  CHECK(errorLines == "");

  WARN("suppress on "
       << cpus << " CPUs: idle quota " << idle.quota << " (system " << idle.systemUsed()
       << " cores), busy " << busy.quota << " (LS " << busy.lsUsed << ", BE " << busy.beUsed
       << "), recovered " << recovered.quota << ", " << writes.size()
       << " quota writes, cfsQuota gauge exported in " << looksWithGauge << " of " << looks
       << " looks, test ran "
       << std::chrono::duration<double>(std::chrono::steady_clock::now() - testStart).count()
       << " s");
}

}  // namespace test_e2e_suppress_kernel
