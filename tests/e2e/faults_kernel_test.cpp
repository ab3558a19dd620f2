// Injected faults against the real koordlet binary on this machine's real cgroup v1
// kernel (issue 19, point 2: the kernel and NRI side). Each fault is produced by the
// kernel itself where it can be:
//
//   vanished  a pod's cgroups removed while the kubelet still lists it: the executor
//             meets ENOENT at its read before the write (most rounds) or at the write
//             itself (when the removal lands between the two: a window of
//             microseconds the test cannot aim at; both paths count "vanished");
//   EINVAL    memory.limit_in_bytes above the cgroup's memory.memsw.limit_in_bytes
//             (the v1 invariant limit <= memsw; our range check lets any byte value
//             through);
//   EBUSY     cpuset.cpus shrunk under a child cgroup that uses the CPUs dropped (v1
//             cpusets must be supersets of their children), and memory.limit_in_bytes
//             below what a process holds when there is no swap to reclaim it to;
//   EACCES    a knob file made 0444 and the agent run without CAP_DAC_OVERRIDE
//             (util-linux setpriv drops it from the bounding and inheritable sets);
//   EROFS     the agent's cgroup root is a read-only bind mount of the private tree;
//   SIGTERM   sent while the first write batch is going to the kernel;
//   NRI       the runtime peer closing mid-message, then sending a frame header
//             over the plugin's 64 MiB frame limit.
//
// The writer is the runtime hooks' reconciler (--runtime-hooks-reconcile-interval=1s): a
// BestEffort pod with batch-cpu 1k and batch-memory 64Mi gets cpu.shares 1024,
// cpu.cfs_quota_us 100000 and memory.limit_in_bytes 64 MiB on its pod and container
// cgroups; an LSR pod bound to CPU 1 gets cpuset.cpus "1" on its container. For each
// fault the test checks that the agent keeps running, says it once in its log (lines
// counted), counts it in a metric, and converges the round after the fault ends.
// Every wait is a poll with a deadline wide enough for a loaded 2-core machine.
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/read_file.h"
#include "tests/support/agent_process.h"
#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/exposition.h"
#include "tests/support/http_get.h"
#include "tests/support/memory_hog.h"
#include "tests/support/nri_runtime_peer.h"
#include "tests/support/poll.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"
#include "tests/support/test_kubelet.h"

namespace test_e2e_faults_kernel {  // this file's own names: one e2e binary, unity chunks

namespace {

using koord::test::AgentProcess;
using koord::test::CgroupV1Tree;
using koord::test::httpGet;
using koord::test::Scrape;
using koord::test::TempTree;
using koord::test::TestKubelet;
using koord::test::waitFor;
using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr auto kLimit = 20s;
const std::string kNode = "e2e-faults-node";
const std::string kShares = "1024";                    // batch-cpu 1k
const std::string kQuota = "100000";                   // 1 CPU per 100 ms
const std::string kMemory = std::to_string(64 << 20);  // batch-memory 64Mi

const char* agentBinary() {
  const char* bin = std::getenv("KOORDLET_BIN");
  if (bin == nullptr || *bin == '\0') {
    FAIL("KOORDLET_BIN is not set (tests/e2e/meson.build sets it to the koordlet binary)");
  }
  return bin;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

struct BePod {
  std::string name, uid, container;
  std::string dir() const { return "kubepods/besteffort/pod" + uid; }
  std::string ctrDir() const { return dir() + "/" + container; }
};

struct Knob {
  std::string ctrl, dir, file, value;
};

// Lines of `log` holding every one of `parts`.
int countLines(const std::string& log, const std::vector<std::string>& parts) {
  std::istringstream in(log);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (const auto& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) ++n;
  }
  return n;
}

// Seconds of the day of a klog line ("I1126 19:42:45.184714 ..."); nullopt if none.
std::optional<double> klogTime(const std::string& line) {
  int h = 0, m = 0;
  double sec = 0;
  if (line.size() < 22 || std::sscanf(line.c_str() + 6, "%d:%d:%lf", &h, &m, &sec) != 3) {
    return std::nullopt;
  }
  return h * 3600.0 + m * 60 + sec;
}

// For each NRI "connection ... lost" line, the time until the next "NRI connected".
std::vector<double> reconnectWaits(const std::string& log) {
  std::vector<double> out;
  double lostAt = -1;  // < 0: no "lost" line pending
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("NRI connection to") != std::string::npos &&
        line.find(" lost: ") != std::string::npos) {
      lostAt = klogTime(line).value_or(-1);
    } else if (lostAt >= 0 && line.find("NRI connected to") != std::string::npos) {
      if (auto at = klogTime(line)) {
        double wait = *at - lostAt;
        if (wait < 0) wait += 86400;  // past midnight
        out.push_back(wait);
      }
      lostAt = -1;
    }
  }
  return out;
}

// A node of BestEffort batch pods (and optionally an LSR pod on CPU 1) in a private
// cgroup v1 tree, the kubelet stand-in listing them, and the agent reconciling them.
class FaultNode {
 public:
  struct Options {
    int bePods = 1;
    bool lsr = false;
    std::vector<std::string> wrapper;  // e.g. setpriv ... before the agent binary
    std::string cgroupRoot;            // "" = the tree's symlink dir
    bool nri = false;                  // --enable-nri-runtime-hook
    std::vector<std::string> extraFlags;
  };

  explicit FaultNode(Options o) : opts_(std::move(o)), tree_("faults", tmp_.path("cgroup")) {
    for (int i = 0; i < opts_.bePods; ++i) {
      const std::string name = "be-fault-" + std::to_string(i);
      pods_.push_back({name, koord::test::uuidFrom("faults/" + name),
                       koord::test::hexId("faults/" + name + "/main")});
      tree_.mkdirs(pods_.back().ctrDir());
    }
    lsrUid_ = koord::test::uuidFrom("faults/lsr");
    lsrCtr_ = koord::test::hexId("faults/lsr/app");
    if (opts_.lsr) tree_.mkdirs(lsrCtrDir());
    tree_.mkdirs("kubepods/burstable");
    kubelet_.setBody(podList());
  }

  // KOORDLET_FAULTS_LOG_DIR=<dir> keeps each agent's log there (to read what it said).
  ~FaultNode() {
    const char* keep = std::getenv("KOORDLET_FAULTS_LOG_DIR");
    if (keep == nullptr || agent_ == nullptr) return;
    static int serial = 0;
    std::ofstream(std::string(keep) + "/agent-" + std::to_string(++serial) + ".log")
        << agent_->log();
  }
  FaultNode(const FaultNode&) = delete;
  FaultNode& operator=(const FaultNode&) = delete;

  // One more BE pod: its cgroups made, then listed by the kubelet.
  const BePod& addBePod() {
    const std::string name = "be-fault-" + std::to_string(pods_.size());
    pods_.push_back({name, koord::test::uuidFrom("faults/" + name),
                     koord::test::hexId("faults/" + name + "/main")});
    tree_.mkdirs(pods_.back().ctrDir());
    kubelet_.setBody(podList());
    return pods_.back();
  }

  // The kubelet's list changes as when a pod's sandbox restarts (its containers'
  // restartCount goes up): what tells the agent a gone cgroup may be back.
  void restartCountUp() {
    ++restarts_;
    kubelet_.setBody(podList());
  }

  CgroupV1Tree& tree() { return tree_; }
  const CgroupV1Tree& tree() const { return tree_; }
  const TempTree& tmp() const { return tmp_; }
  const std::vector<BePod>& pods() const { return pods_; }
  std::string lsrDir() const { return "kubepods/pod" + lsrUid_; }
  std::string lsrCtrDir() const { return lsrDir() + "/" + lsrCtr_; }
  AgentProcess& agent() { return *agent_; }
  uint16_t port() const { return port_; }

  // Starts the agent with the node's flags and `more`, and waits for its port.
  void start(const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = opts_.wrapper;
    std::string binary = agentBinary();
    if (!args.empty()) {
      args.push_back(binary);
      binary = args.front();
      args.erase(args.begin());
    }
    const std::string root = opts_.cgroupRoot.empty() ? tree_.linkDir() : opts_.cgroupRoot;
    std::vector<std::string> flags = {
        "--addr=127.0.0.1:0",
        "--cgroup-root-dir=" + root,
        "--proc-root-dir=/proc/",
        std::string("--enable-nri-runtime-hook=") + (opts_.nri ? "true" : "false"),
        "--kubelet-insecure-tls=true",
        "--kubelet-addr=127.0.0.1",
        "--kubelet-read-only-port=" + std::to_string(kubelet_.port()),
        "--kubelet-sync-interval=1s",
        "--collect-res-used-interval=500ms",
        "--reconcile-interval-seconds=1",
        "--runtime-hooks-reconcile-interval=1s",
        "--cpu-suppress-interval-seconds=0",
        "--audit-log-dir=" + tmp_.path("audit")};
    flags.insert(flags.end(), opts_.extraFlags.begin(), opts_.extraFlags.end());
    flags.insert(flags.end(), more.begin(), more.end());
    args.insert(args.end(), flags.begin(), flags.end());
    agent_ = std::make_unique<AgentProcess>(binary, args, tmp_.path("agent.log"), kNode);
    auto port = agent_->waitForServingPort(kLimit);
    if (!port) FAIL("the agent did not start serving\n--- agent log ---\n" << agent_->log());
    port_ = *port;
  }

  // The knobs the reconciler gives every pod, as the kernel must hold them.
  std::vector<Knob> intended() const {
    std::vector<Knob> out;
    for (const BePod& p : pods_) {
      for (const std::string& d : {p.dir(), p.ctrDir()}) {
        out.push_back({"cpu", d, "cpu.shares", kShares});
        out.push_back({"cpu", d, "cpu.cfs_quota_us", kQuota});
        out.push_back({"memory", d, "memory.limit_in_bytes", kMemory});
      }
    }
    if (opts_.lsr) out.push_back({"cpuset", lsrCtrDir(), "cpuset.cpus", "1"});
    return out;
  }

  std::string read(const Knob& k) const { return read(k.ctrl, k.dir, k.file); }
  std::string read(const std::string& ctrl, const std::string& dir, const std::string& file) const {
    auto text = koord::readFile(tree_.kernelPath(ctrl, dir, file));
    return text ? trimmed(*text) : "<unreadable: " + text.error().message + ">";
  }
  void write(const std::string& ctrl, const std::string& dir, const std::string& file,
             const std::string& value) const {
    INFO(ctrl << " " << dir << "/" << file << " <- " << value);
    REQUIRE(tryWrite(ctrl, dir, file, value));
  }
  bool tryWrite(const std::string& ctrl, const std::string& dir, const std::string& file,
                const std::string& value) const {
    std::ofstream out(tree_.kernelPath(ctrl, dir, file));
    out << value << "\n";
    out.flush();
    return out.good();
  }

  // "" once every knob in `knobs` holds its value.
  std::string mismatch(const std::vector<Knob>& knobs) const {
    for (const Knob& k : knobs) {
      const std::string got = read(k);
      if (got != k.value) return k.dir + "/" + k.file + " = " + got + ", want " + k.value;
    }
    return "";
  }

  void waitConverged(const std::string& when) {
    const std::string why = waitFor(kLimit, [&] { return alive() + mismatch(intended()); });
    if (!why.empty()) fail(when + ": " + why);
  }

  std::string alive() { return agent_->running() ? "" : "the agent exited; "; }

  std::optional<Scrape> scrape() const {
    auto r = httpGet(port_, "/metrics");
    if (!r || r->status != 200) return std::nullopt;
    return Scrape(std::move(r->body));
  }
  // koordlet_resource_update_duration_milliseconds_count{status}; 0 when absent.
  double writes(const std::string& status) const {
    auto s = scrape();
    if (!s) return -1;
    return s
        ->value("koordlet_resource_update_duration_milliseconds_count",
                {{"type", "cgroup"}, {"status", status}})
        .value_or(0);
  }
  // koordlet_state_entries{state}; -1 when absent.
  double stateEntries(const std::string& holder) const {
    auto s = scrape();
    if (!s) return -1;
    return s->value("koordlet_state_entries", {{"state", holder}}).value_or(-1);
  }
  // Waits until `status` writes reach `atLeast` (a few reconcile rounds of the fault).
  void waitWrites(const std::string& status, double atLeast) {
    const std::string why = waitFor(kLimit, [&]() -> std::string {
      const double got = writes(status);
      if (!agent_->running()) return "the agent exited";
      return got >= atLeast ? "" : "writes{status=" + status + "} = " + std::to_string(got);
    });
    if (!why.empty()) fail(why + ", want at least " + std::to_string(atLeast));
  }

  [[noreturn]] void fail(const std::string& what) {
    FAIL(what << "\n--- agent log ---\n" << agent_->log());
    std::abort();
  }

  void stopCleanly() {
    auto status = agent_->terminate(10s);
    REQUIRE(status);
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 0);
  }

 private:
  std::string podList() const {
    json items = json::array();
    for (const BePod& p : pods_) {
      const json batch = {{"kubernetes.io/batch-cpu", "1k"},
                          {"kubernetes.io/batch-memory", "64Mi"}};
      items.push_back({{"metadata",
                        {{"name", p.name},
                         {"namespace", "default"},
                         {"uid", p.uid},
                         {"labels", {{"koordinator.sh/qosClass", "BE"}}}}},
                       {"spec",
                        {{"priorityClassName", "koord-batch"},
                         {"priority", 5000},
                         {"containers",
                          {{{"name", "main"},
                            {"image", "polinux/stress"},
                            {"resources", {{"limits", batch}, {"requests", batch}}}}}}}},
                       {"status",
                        {{"phase", "Running"},
                         {"qosClass", "BestEffort"},
                         {"containerStatuses",
                          {{{"name", "main"},
                            {"containerID", "containerd://" + p.container},
                            {"restartCount", restarts_}}}}}}});
    }
    if (opts_.lsr) {
      items.push_back({{"metadata",
                        {{"name", "lsr-fault"},
                         {"namespace", "default"},
                         {"uid", lsrUid_},
                         {"labels", {{"koordinator.sh/qosClass", "LSR"}}},
                         {"annotations",
                          {{"scheduling.koordinator.sh/resource-status", R"({"cpuset":"1"})"}}}}},
                       {"spec",
                        {{"containers",
                          {{{"name", "app"},
                            {"image", "nginx:1.25"},
                            {"resources",
                             {{"limits", {{"cpu", "1"}, {"memory", "256Mi"}}},
                              {"requests", {{"cpu", "1"}, {"memory", "256Mi"}}}}}}}}}},
                       {"status",
                        {{"phase", "Running"},
                         {"qosClass", "Guaranteed"},
                         {"containerStatuses",
                          {{{"name", "app"}, {"containerID", "containerd://" + lsrCtr_}}}}}}});
    }
    return json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}}.dump();
  }

  Options opts_;
  int restarts_ = 0;
  TempTree tmp_;
  CgroupV1Tree tree_;
  TestKubelet kubelet_;
  std::vector<BePod> pods_;
  std::string lsrUid_, lsrCtr_;
  std::unique_ptr<AgentProcess> agent_;
  uint16_t port_ = 0;
};

#define KOORDLET_SKIP_WITHOUT_V1_TREE()                                         \
  do {                                                                          \
    if (std::string why = CgroupV1Tree::unavailableReason(); !why.empty()) {    \
      KOORDLET_SKIP("the agent writes a private real cgroup v1 tree: " << why); \
    }                                                                           \
  } while (0)

}  // namespace

TEST_CASE(
    "with the hooks' reconcile interval an hour, a pod the kubelet lists later gets its hook "
    "values in the rounds after the pod list changed",
    "[e2e][faults][kernel]") {
  KOORDLET_SKIP_WITHOUT_V1_TREE();
  FaultNode::Options o;
  o.bePods = 1;
  FaultNode node(o);
  node.start({"--runtime-hooks-reconcile-interval=1h"});  // the last flag given wins
  node.waitConverged("the first round");                  // the first run is always due
  const BePod& added = node.addBePod();
  INFO("added pod " << added.uid);
  node.waitConverged("after the kubelet listed a new pod");  // only the change can run it
  node.stopCleanly();
}

TEST_CASE(
    "a pod's cgroups removed while the kubelet still lists it: the agent counts the vanished "
    "writes once per directory and plans none there again, logs nothing per round, drops the "
    "pod's series, and writes it again when it comes back",
    "[e2e][faults][kernel]") {
  KOORDLET_SKIP_WITHOUT_V1_TREE();
  FaultNode::Options o;
  o.bePods = 2;
  FaultNode node(o);
  node.start();
  node.waitConverged("before the fault");
  const BePod gone = node.pods()[0];
  const BePod kept = node.pods()[1];
  auto podSeries = [&](const BePod& p) {
    auto s = node.scrape();
    return s ? s->value("koordlet_pod_cpu_usage_cores", {{"pod_uid", p.uid}}) : std::nullopt;
  };

  // The pod's cgroups go (the runtime removed them) while every strategy runs and the
  // kubelet still lists the pod; the next reconcile reads or writes a missing file.
  struct {
    double owners, collector, failureKeys;
  } state{node.stateEntries("executor_owners"), node.stateEntries("pod_collector"),
          node.stateEntries("failure_log_keys")};
  INFO("state before: owners " << state.owners << ", pod collector " << state.collector
                               << ", failure-log keys " << state.failureKeys);
  REQUIRE(state.owners >= 12);  // both pods' six knobs
  const double vanishedBefore = node.writes("vanished");
  node.tree().removeDirs(gone.dir());
  // A knob of the other pod changed behind the agent's back: it must still be repaired
  // while the first pod's writes vanish.
  node.write("cpu", kept.ctrDir(), "cpu.shares", "2");
  // Found gone once per directory (pod and container, in cpu and memory), then not
  // planned into again while the pod list stays as it is (issue 34: a steady node
  // counted 62 vanished writes in 30 s).
  node.waitWrites("vanished", vanishedBefore + 1);
  std::string gone4 = waitFor(kLimit, [&]() -> std::string {
    const double n = node.stateEntries("executor_gone_dirs");
    return n >= 4 ? "" : "executor_gone_dirs " + std::to_string(n);
  });
  if (!gone4.empty()) node.fail(gone4);
  const double vanishedOnce = node.writes("vanished");
  std::this_thread::sleep_for(4s);  // four reconcile rounds
  CHECK(node.writes("vanished") == vanishedOnce);
  CHECK(vanishedOnce - vanishedBefore <= 6);
  std::string why = waitFor(kLimit, [&]() -> std::string {
    return node.alive() + node.mismatch({{"cpu", kept.ctrDir(), "cpu.shares", kShares}});
  });
  if (!why.empty()) node.fail("the other pod during the fault: " + why);
  // The pod's own series went with its cgroups (state dropped, not kept stale).
  why = waitFor(kLimit, [&]() -> std::string {
    auto v = podSeries(gone);
    return v ? "koordlet_pod_cpu_usage_cores of the removed pod still exported" : "";
  });
  if (!why.empty()) node.fail(why);
  // And the agent's per-cgroup state with them: the executor no longer holds the
  // removed pod's six knobs (shares, quota, memory limit of pod and container), the
  // pod collector its entries; no failure-log streak was opened for it.
  why = waitFor(kLimit, [&]() -> std::string {
    const double owners = node.stateEntries("executor_owners");
    const double keys = node.stateEntries("failure_log_keys");
    if (owners != state.owners - 6) {
      return "executor_owners " + std::to_string(owners) + ", want " +
             std::to_string(state.owners - 6);
    }
    if (node.stateEntries("pod_collector") >= state.collector) return "pod_collector not lower";
    if (keys > state.failureKeys) return "failure_log_keys grew to " + std::to_string(keys);
    return "";
  });
  if (!why.empty()) node.fail("state of the removed pod: " + why);
  // A vanished cgroup is normal (a pod just deleted): no line per round about it.
  const std::string log = node.agent().log();
  CHECK(countLines(log, {gone.uid}) <= 1);
  CHECK(countLines(log, {"No such file"}) <= 1);

  // The pod's cgroups come back (as a restarted sandbox's would, with the kubelet's
  // list changing): written again.
  node.tree().mkdirs(gone.ctrDir());
  node.restartCountUp();
  node.waitConverged("after the cgroups came back");
  why = waitFor(kLimit, [&]() -> std::string {
    const double owners = node.stateEntries("executor_owners");
    return owners == state.owners ? "" : "executor_owners " + std::to_string(owners);
  });
  CHECK(why == "");
  node.stopCleanly();
}

TEST_CASE(
    "EINVAL from the kernel (memory.limit_in_bytes above memory.memsw.limit_in_bytes) is logged "
    "once, counted as invalid, and the limit is written the round after memsw is lifted",
    "[e2e][faults][kernel]") {
  KOORDLET_SKIP_WITHOUT_V1_TREE();
  FaultNode node(FaultNode::Options{});
  const BePod pod = node.pods()[0];
  if (node.read("memory", pod.dir(), "memory.memsw.limit_in_bytes").starts_with("<")) {
    KOORDLET_SKIP("no memory.memsw.limit_in_bytes (swap accounting off): no v1 EINVAL to make");
  }
  node.start();
  node.waitConverged("before the fault");

  // Another writer caps the pod at 32 MiB of memory+swap. The kernel keeps
  // limit <= memsw, so it refuses the agent's 64 MiB with EINVAL, every round.
  // Two writes: the agent may restore the limit between them (then the memsw write is
  // itself EINVAL), so both are retried until the cap holds.
  const std::string cap = std::to_string(32 << 20);
  std::string why = waitFor(kLimit, [&]() -> std::string {
    if (!node.tryWrite("memory", pod.dir(), "memory.limit_in_bytes", cap)) return "limit";
    if (!node.tryWrite("memory", pod.dir(), "memory.memsw.limit_in_bytes", cap)) return "memsw";
    return "";
  });
  REQUIRE(why == "");
  const double before = node.writes("invalid");
  node.waitWrites("invalid", before + 3);
  const std::string path = node.tree().kernelPath("memory", pod.dir(), "memory.limit_in_bytes");
  CHECK(countLines(node.agent().log(),
                   {"memory.limit_in_bytes", pod.dir() + "/", "Invalid argument"}) == 1);
  CHECK(node.read("memory", pod.dir(), "memory.limit_in_bytes") == std::to_string(32 << 20));

  // The cap goes: the next round writes 64 MiB, and the log says it recovered.
  node.write("memory", pod.dir(), "memory.memsw.limit_in_bytes", "-1");
  node.waitConverged("after memsw was lifted");
  why = waitFor(kLimit, [&]() -> std::string {
    return countLines(node.agent().log(), {"memory.limit_in_bytes", "recovered after"}) == 1
               ? ""
               : "no recovery line";
  });
  CHECK(why == "");
  CHECK(countLines(node.agent().log(), {"Invalid argument"}) == 1);
  node.stopCleanly();
}

TEST_CASE(
    "EBUSY from the kernel (cpuset.cpus shrunk under a child cgroup using the CPU dropped) is "
    "logged once, counted, and the list is written once the child is gone",
    "[e2e][faults][kernel]") {
  KOORDLET_SKIP_WITHOUT_V1_TREE();
  if (::sysconf(_SC_NPROCESSORS_ONLN) < 2) KOORDLET_SKIP("fewer than 2 CPUs: no CPU to drop");
  FaultNode::Options o;
  o.lsr = true;
  FaultNode node(o);
  // A nested cgroup in the LSR container (as a runtime's sub-cgroup would be) holding
  // CPU 0, before the agent binds the container to CPU 1.
  const std::string child = node.lsrCtrDir() + "/nested";
  node.tree().mkdirs(child);
  node.write("cpuset", child, "cpuset.cpus", "0");
  node.start();

  const double before = node.writes("busy");
  node.waitWrites("busy", before + 3);
  CHECK(node.read("cpuset", node.lsrCtrDir(), "cpuset.cpus") != "1");
  CHECK(countLines(node.agent().log(), {"cpuset.cpus", "Device or resource busy"}) == 1);
  // The rest of the node is written all the same.
  std::vector<Knob> be = node.intended();
  be.pop_back();  // the LSR cpuset
  std::string why = waitFor(kLimit, [&] { return node.alive() + node.mismatch(be); });
  if (!why.empty()) node.fail("the BE pod during the fault: " + why);

  // The child goes: the next round binds the container to CPU 1.
  node.tree().removeDirs(child);
  node.waitConverged("after the child cgroup went");
  CHECK(countLines(node.agent().log(), {"Device or resource busy"}) == 1);
  node.stopCleanly();
}

TEST_CASE(
    "EBUSY from the kernel (memory.limit_in_bytes below usage it cannot reclaim) is logged once "
    "per cgroup, counted as busy, and the limit is written once the memory is freed",
    "[e2e][faults][kernel]") {
  KOORDLET_SKIP_WITHOUT_V1_TREE();
  {
    std::istringstream swaps(koord::test::readTextFile("/proc/swaps"));
    int lines = 0;
    for (std::string line; std::getline(swaps, line);) lines += !line.empty();
    if (lines > 1) {
      KOORDLET_SKIP(
          "swap is on: the kernel would swap the memory out and take the limit, "
          "no EBUSY to make");
    }
  }
  FaultNode node(FaultNode::Options{});
  const BePod pod = node.pods()[0];
  // The container's workload holds 96 MiB of anonymous memory before the agent
  // comes: with no swap the kernel cannot reclaim it under the 64 MiB limit, and
  // refuses the limit (pod and container) with EBUSY after its reclaim retries.
  auto hog = std::make_unique<koord::test::MemoryHog>(
      [&](pid_t pid) { node.tree().attach(pid, pod.ctrDir()); }, size_t{96} << 20);
  node.start();
  const double before = node.writes("busy");
  node.waitWrites("busy", before + 4);  // two rounds of the pod's and container's limits
  CHECK(node.read("memory", pod.ctrDir(), "memory.limit_in_bytes") != kMemory);
  CHECK(node.agent().running());
  const std::string busy = "Device or resource busy";
  CHECK(countLines(node.agent().log(), {"memory.limit_in_bytes", pod.ctrDir() + "/", busy}) == 1);
  CHECK(countLines(node.agent().log(), {"memory.limit_in_bytes", pod.dir() + "/memory", busy}) ==
        1);
  // The cpu knobs of the same pod are written all the same.
  const std::string why = waitFor(kLimit, [&] {
    return node.alive() + node.mismatch({{"cpu", pod.ctrDir(), "cpu.cfs_quota_us", kQuota},
                                         {"cpu", pod.dir(), "cpu.cfs_quota_us", kQuota}});
  });
  if (!why.empty()) node.fail("the cpu knobs during the fault: " + why);

  // The workload exits: the next round sets the limits.
  hog.reset();
  node.waitConverged("after the memory was freed");
  CHECK(countLines(node.agent().log(), {busy}) == 2);
  node.stopCleanly();
}

TEST_CASE(
    "EACCES from the kernel (a 0444 knob, the agent without CAP_DAC_OVERRIDE) is logged once, "
    "counted as denied, and the knob is repaired once it is writable again",
    "[e2e][faults][kernel]") {
  KOORDLET_SKIP_WITHOUT_V1_TREE();
  if (::access("/usr/bin/setpriv", X_OK) != 0) {
    KOORDLET_SKIP("no /usr/bin/setpriv (util-linux) to drop CAP_DAC_OVERRIDE");
  }
  FaultNode::Options o;
  o.wrapper = {"/usr/bin/setpriv", "--inh-caps=-dac_override", "--bounding-set=-dac_override"};
  FaultNode node(o);
  node.start();
  node.waitConverged("before the fault");
  {  // The agent really runs without the capability.
    const std::string status =
        koord::test::readTextFile("/proc/" + std::to_string(node.agent().pid()) + "/status");
    auto at = status.find("CapEff:\t");
    REQUIRE(at != std::string::npos);
    const uint64_t eff = std::strtoull(status.c_str() + at + 8, nullptr, 16);
    REQUIRE((eff & (uint64_t{1} << 1)) == 0);  // CAP_DAC_OVERRIDE is bit 1
  }

  const BePod pod = node.pods()[0];
  const std::string file = node.tree().kernelPath("cpu", pod.ctrDir(), "cpu.shares");
  REQUIRE(::chmod(file.c_str(), 0444) == 0);
  node.write("cpu", pod.ctrDir(), "cpu.shares", "2");  // we (root, with the capability) can
  const double before = node.writes("denied");
  node.waitWrites("denied", before + 3);
  CHECK(node.read("cpu", pod.ctrDir(), "cpu.shares") == "2");
  CHECK(countLines(node.agent().log(), {"cpu.shares", "Permission denied"}) == 1);

  REQUIRE(::chmod(file.c_str(), 0644) == 0);
  node.waitConverged("after the file was writable again");
  CHECK(countLines(node.agent().log(), {"Permission denied"}) == 1);
  node.stopCleanly();
}

namespace {

// The private tree bind-mounted read-only at <dir>/<controller>: the agent's cgroup
// root. Unmounted (lazily) before the tree goes.
class ReadOnlyBinds {
 public:
  ReadOnlyBinds(const CgroupV1Tree& tree, const std::string& dir) {
    try {
      bindAll(tree, dir);
    } catch (...) {
      unmountAll();  // no destructor runs for a constructor that throws
      throw;
    }
  }
  ~ReadOnlyBinds() { unmountAll(); }
  ReadOnlyBinds(const ReadOnlyBinds&) = delete;
  ReadOnlyBinds& operator=(const ReadOnlyBinds&) = delete;
  void setAllReadOnly(bool ro) {
    for (const auto& m : mounted_) setReadOnly(m, ro);
  }

 private:
  void bindAll(const CgroupV1Tree& tree, const std::string& dir) {
    for (const std::string& c : CgroupV1Tree::controllers()) {
      const std::string target = dir + "/" + c;
      std::filesystem::create_directories(target);
      const std::string source = std::string(CgroupV1Tree::kRoot) + "/" + c + "/" + tree.prefix();
      if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
        throw std::runtime_error("bind " + source + ": " + std::strerror(errno));
      }
      mounted_.push_back(target);
      setReadOnly(target, true);
    }
  }
  void unmountAll() {
    for (const auto& m : mounted_) ::umount2(m.c_str(), MNT_DETACH);
    mounted_.clear();
  }
  static void setReadOnly(const std::string& target, bool ro) {
    const unsigned long flags = MS_REMOUNT | MS_BIND | (ro ? MS_RDONLY : 0);
    if (::mount(nullptr, target.c_str(), nullptr, flags, nullptr) != 0) {
      throw std::runtime_error("remount " + target + ": " + std::strerror(errno));
    }
  }
  std::vector<std::string> mounted_;
};

}  // namespace

TEST_CASE(
    "a read-only cgroupfs (EROFS on every write) is logged once for the whole root, counted, "
    "and the knobs are written once it is read-write again",
    "[e2e][faults][kernel]") {
  KOORDLET_SKIP_WITHOUT_V1_TREE();
  FaultNode::Options o;
  o.bePods = 2;
  auto rootHolder = std::make_unique<TempTree>();
  o.cgroupRoot = rootHolder->path("ro");
  FaultNode node(o);
  ReadOnlyBinds binds(node.tree(), o.cgroupRoot);
  node.start();

  const double before = node.writes("read_only");
  node.waitWrites("read_only", before + 12 * 2);  // two rounds of 12 knobs
  CHECK(node.mismatch(node.intended()) != "");
  const std::string log = node.agent().log();
  INFO(log);
  CHECK(countLines(log, {"Read-only file system"}) == 1);
  CHECK(node.agent().running());

  binds.setAllReadOnly(false);
  node.waitConverged("after the remount read-write");
  CHECK(countLines(node.agent().log(), {"Read-only file system"}) == 1);
  node.stopCleanly();
}

TEST_CASE(
    "SIGTERM while the first write batch goes to the kernel: exit 0, every audit line "
    "complete, every file holds its old value or the one its last audit line says",
    "[e2e][faults][kernel]") {
  KOORDLET_SKIP_WITHOUT_V1_TREE();
  FaultNode::Options o;
  o.bePods = 40;
  FaultNode node(o);
  const std::string audit = node.tmp().path("audit/audit.log");
  std::vector<std::string> initial;  // what each new cgroup holds (cpu.shares is 1024)
  for (const Knob& k : node.intended()) initial.push_back(node.read(k));
  node.start();
  // Signal as soon as the first write is in the audit log: the batch (240 writes)
  // is under way.
  const auto deadline = std::chrono::steady_clock::now() + kLimit;
  auto auditBytes = [&] {
    std::error_code ec;
    const auto n = std::filesystem::file_size(audit, ec);
    return ec ? 0 : n;
  };
  while (auditBytes() == 0) {
    if (!node.agent().running()) node.fail("the agent exited before writing");
    if (std::chrono::steady_clock::now() > deadline) node.fail("no write in the audit log");
    std::this_thread::sleep_for(1ms);
  }
  const size_t atSignal = countLines(koord::test::readTextFile(audit), {"\"path\""});
  node.stopCleanly();
  // It shut down as told, not by dying: the signal line, then the last line.
  const std::string log = node.agent().log();
  CHECK(countLines(log, {"received signal 15, shutting down"}) == 1);
  CHECK(log.ends_with("stopped\n"));
  const std::string text = koord::test::readTextFile(audit);
  REQUIRE(!text.empty());
  CHECK(text.back() == '\n');
  std::map<std::string, std::string> lastNew;
  size_t lines = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    ++lines;
    auto event = json::parse(line, nullptr, false);
    INFO(line);
    REQUIRE_FALSE(event.is_discarded());
    lastNew[event.at("path").get<std::string>()] = event.at("new").get<std::string>();
  }
  WARN(atSignal << " audit lines when SIGTERM was sent, " << lines << " at exit (of "
                << node.intended().size() << " knobs)");
  // What the kernel holds is the last value written, for each file written; the
  // files not written hold what they held before the agent started.
  const std::vector<Knob> knobs = node.intended();
  for (size_t i = 0; i < knobs.size(); ++i) {
    const Knob& k = knobs[i];
    const std::string got = node.read(k);
    bool found = false;
    for (const auto& [path, value] : lastNew) {
      if (path.ends_with("/" + k.dir + "/" + k.file)) {
        found = true;
        CHECK(got == value);
      }
    }
    if (!found) CHECK(got == initial[i]);
  }
}

TEST_CASE(
    "the NRI runtime closing mid-message, then sending a frame over the limit: the agent drops "
    "each connection, counts it, says it once, reconnects, and its loop keeps writing",
    "[e2e][faults][nri]") {
  KOORDLET_SKIP_WITHOUT_V1_TREE();
  FaultNode::Options o;
  o.nri = true;
  FaultNode node(o);
  const std::string socketPath = node.tmp().path("run/nri/nri.sock");
  std::filesystem::create_directories(node.tmp().path("run/nri"));
  const BePod pod = node.pods()[0];
  koord::test::NriRuntimePeer peer;
  {
    koord::test::PodSpec s;
    s.name = pod.name;
    s.uid = pod.uid;
    s.qos = koord::test::PodQos::kBestEffort;
    s.koordQos = "BE";
    const auto sandbox = koord::test::makePod(s);
    koord::test::ContainerSpec c;
    c.name = "main";
    auto ctr = koord::test::makeContainer(sandbox, c);
    ctr.set_id(pod.container);
    peer.setSyncState({sandbox}, {ctr});
  }
  peer.listen(socketPath);
  node.start({"--var-run-root-dir=" + node.tmp().path("run"),
              "--runtime-hooks-nri-socket-path=nri/nri.sock",
              "--runtime-hooks-nri-backoff-duration=100ms", "--runtime-hooks-nri-backoff-cap=400ms",
              // No connection here lasts a minute, so none resets the back-off.
              "--runtime-hooks-nri-connect-timeout=60s"});
  if (!peer.waitSynchronized(1, kLimit)) node.fail("no NRI handshake: " + peer.violationsText());
  node.waitConverged("before the faults");
  auto nri = [&](const std::string& name) {
    auto s = node.scrape();
    return s ? s->value(name).value_or(-1) : -1;
  };
  auto waitCounts = [&](double connects, double disconnects, const std::string& when) {
    const std::string why = waitFor(kLimit, [&]() -> std::string {
      const double c = nri("koordlet_nri_connects_total");
      const double d = nri("koordlet_nri_disconnects_total");
      if (!node.agent().running()) return "the agent exited";
      if (c != connects || d != disconnects) {
        return "connects " + std::to_string(c) + ", disconnects " + std::to_string(d);
      }
      if (nri("koordlet_nri_connected") != 1) return "koordlet_nri_connected != 1";
      return "";
    });
    if (!why.empty()) node.fail(when + ": " + why);
  };
  waitCounts(1, 0, "connected");

  // 1. The runtime sends 20 bytes of a CreateContainer request and closes: the agent
  // drops the connection, counts it, and registers again after its back-off.
  REQUIRE(peer.closeMidMessage(20));
  if (!peer.waitSynchronized(2, kLimit)) node.fail("no reconnect after a message cut short");
  waitCounts(2, 1, "after the message cut short");
  auto protocolCloses = [&] {
    auto s = node.scrape();
    return s ? s->value("koordlet_nri_limit_closes_total", {{"limit", "protocol"}}).value_or(-1)
             : -1;
  };
  CHECK(protocolCloses() == 0);  // a lost runtime, not a protocol violation
  CHECK(countLines(node.agent().log(), {"lost: runtime closed the connection"}) == 1);

  // 2. A mux frame header announcing 64 MiB + 1 bytes on the plugin's ConnID: over the
  // plugin's frame limit, refused at the header (nothing allocated), connection
  // dropped and counted, then a reconnect.
  std::string header;
  auto be32 = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) header.push_back(static_cast<char>(v >> shift));
  };
  be32(koord::test::kPeerPluginConn);
  be32((64u << 20) + 1);
  REQUIRE(peer.sendRaw(header));
  if (!peer.waitSynchronized(3, kLimit)) node.fail("no reconnect after the oversized frame");
  waitCounts(3, 2, "after the oversized frame");
  CHECK(protocolCloses() == 1);
  CHECK(countLines(node.agent().log(), {"lost:", "exceeds the limit"}) == 1);
  CHECK(countLines(node.agent().log(), {"lost:"}) == 2);

  // Each reconnect waited its back-off, doubling as the faults came in a row (100 ms,
  // then 200 ms): read from the agent's own log times, "lost" to the next "connected".
  const std::vector<double> waits = reconnectWaits(node.agent().log());
  REQUIRE(waits.size() == 2);
  INFO("reconnect waits " << waits[0] << " s, " << waits[1] << " s");
  CHECK(waits[0] >= 0.095);
  CHECK(waits[1] >= 0.195);
  CHECK(waits[1] > waits[0]);

  // The loop kept running through both: a knob changed behind the agent's back is
  // repaired, and the runtime's calls are answered on the new connection.
  node.write("cpu", pod.ctrDir(), "cpu.shares", "2");
  node.waitConverged("after the NRI faults");
  koord::test::PodSpec s;
  s.name = pod.name;
  s.uid = pod.uid;
  s.qos = koord::test::PodQos::kBestEffort;
  s.koordQos = "BE";
  s.annotations["node.koordinator.sh/extended-resource-spec"] =
      R"({"containers":{"main":{"requests":{"kubernetes.io/batch-cpu":"1000"},)"
      R"("limits":{"kubernetes.io/batch-cpu":"1000","kubernetes.io/batch-memory":"64Mi"}}}})";
  const auto sandbox = koord::test::makePod(s);
  koord::test::ContainerSpec c;
  c.name = "main";
  auto reply = peer.createContainer(sandbox, koord::test::makeContainer(sandbox, c));
  REQUIRE(reply.ok());
  CHECK(reply.response.adjust().linux().resources().cpu().shares().value() == 1024);
  node.stopCleanly();
}

}  // namespace test_e2e_faults_kernel
