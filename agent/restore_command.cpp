#include "agent/restore_command.h"

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/explain_command.h"
#include "base/log.h"
#include "base/read_file.h"
#include "cgroupfs/cgroup_files.h"
#include "cgroupfs/cgroup_mounts.h"
#include "kube/kubelet_client.h"
#include "qos/cpu_weight_probe.h"
#include "qos/qos_manager.h"
#include "qos/restore_plan.h"
#include "resctrl/group_ownership.h"

namespace koord {

namespace {

namespace fs = std::filesystem;

// Pauses every live agent on this binary, and waits (up to 10 s) until the one at
// --addr says so in /config. False when one could not be signalled.
bool pauseAgents(const Options& opts, std::ostream& out, std::ostream& err) {
  bool ok = true;
  const std::vector<pid_t> pids = runningAgents();
  for (pid_t pid : pids) {
    if (opts.dryRun) {
      out << "dry-run: would pause the running agent (pid " << pid << ")\n";
    } else if (::kill(pid, SIGUSR2) != 0) {
      err << "koordlet restore: cannot pause the running agent (pid " << pid
          << "): " << std::strerror(errno) << "\n";
      ok = false;
    } else {
      out << "paused the running agent (pid " << pid << "): it writes nothing until it restarts\n";
    }
  }
  if (pids.empty() || opts.dryRun) return ok;
  const std::string& addr = opts.addr;
  for (int i = 0; i < 100; ++i) {
    if (auto reply = agentGet(addr, "/config", std::chrono::seconds(2));
        reply && reply->status == 200) {
      auto j = nlohmann::json::parse(reply->body, nullptr, false);
      if (j.is_object() && j.value("paused", false)) return ok;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  err << "koordlet restore: the agent at " << addr
      << " did not confirm the pause within 10 s (its --addr?); restored anyway\n";
  return false;
}

Result<std::vector<Pod>> kubeletPods(const Options& opts) {
  boost::asio::io_context io(1);
  KubeletClient client(io, kubeletClientConfig(opts));
  Result<std::vector<Pod>> pods = makeError("no answer");
  client.get("/pods/", [&](Result<KubeletResponse> r) {
    if (!r) {
      pods = r.error();
    } else if (r->status != 200) {
      pods = makeError("kubelet /pods/: HTTP " + std::to_string(r->status));
    } else {
      pods = parsePodList(r->body);
    }
  });
  io.run();
  return pods;
}

}  // namespace

// Other processes running this very binary: the agent we must pause. This
// process's own /proc, not --proc-root-dir (the host's, for collection): kill()
// takes pids of our own pid namespace.
std::vector<pid_t> runningAgents() {
  std::vector<pid_t> out;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return out;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    std::error_code e;
    if (fs::read_symlink(entry.path() / "exe", e) != self || e) continue;
    // Only a process that handles SIGUSR2 (an agent past its start; not a
    // subcommand, --help or --check): to any other the signal is fatal.
    auto status = readFile((entry.path() / "status").string(), 1 << 16);
    if (!status) continue;
    const size_t at = status->find("\nSigCgt:");
    if (at == std::string::npos) continue;
    const uint64_t caught = std::strtoull(status->c_str() + at + 8, nullptr, 16);
    if ((caught & (uint64_t{1} << (SIGUSR2 - 1))) == 0) continue;
    out.push_back(pid);
  }
  return out;
}

Result<std::vector<std::string>> agentArgs(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/cmdline";
  auto text = readFile(path, 1 << 20);
  if (!text) return text.error();
  std::vector<std::string> args;
  size_t start = 0;
  while (start < text->size()) {
    const size_t end = text->find('\0', start);
    args.push_back(text->substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!args.empty()) args.erase(args.begin());  // argv[0]
  return args;
}

int runRestore(const Options& given, const Clock& clock, int64_t pageSize, std::ostream& out,
               std::ostream& err) {
  int status = 0;
  if (!pauseAgents(given, out, err)) status = 1;
  // The agent's own root: with the same flags, restore finds the tree the agent wrote.
  Options opts = given;
  std::string said;
  opts.paths.cgroupRoot = effectiveCgroupRoot(given.paths.cgroupRoot, &said);
  if (!said.empty()) out << "restore: " << said << "\n";

  auto version = detectCgroupVersion(opts.paths.cgroupRoot);
  Result<CgroupDriver> driver = version ? detectCgroupDriver(opts.paths.cgroupRoot, *version)
                                        : Result<CgroupDriver>(version.error());
  if (!driver) {
    err << "koordlet restore: no kubepods tree under " << opts.paths.cgroupRoot << ": "
        << driver.error().message << "\n";
    return 1;
  }
  const CgroupLayout layout(*version, *driver);

  ExecutorConfig ec = executorConfig(opts, pageSize);
  ec.verify = std::chrono::seconds(0);  // read every file: nothing is known yet
  FailureLog failures(clock);
  const KnobSupport support = KnobSupport::probe(opts.paths.cgroupRoot, layout);
  Executor executor(ec, layout, support, clock, failures);

  RestoreInput in{.layout = layout,
                  .scope = {},
                  .support = support,
                  .pods = std::nullopt,
                  .fullCpus = {},
                  .besteffortDirs = {}};
  {
    BesteffortDirs be = listBesteffortDirs(layout, opts.paths.cgroupRoot);
    in.besteffortDirs = std::move(be.pods);
    in.besteffortDirs.insert(in.besteffortDirs.end(), be.containers.begin(), be.containers.end());
  }
  const FeatureGates& g = opts.featureGates;
  in.scope.cpuSuppress = g.enabled("BECPUSuppress");
  in.scope.cpuBurst = g.enabled("CPUBurst");
  in.scope.batchResource = g.enabled("BatchResource");
  in.scope.cpusetAllocator = g.enabled("CPUSetAllocator");
  in.scope.cpuNormalization = g.enabled("CPUNormalization");
  in.scope.memoryQos = g.enabled("CgroupReconcile");
  in.scope.groupIdentity = g.enabled("GroupIdentity");
  in.scope.kubeletStaticCpuPolicy = opts.kubeletCpuManagerPolicy == "static";
  if (auto cpus = executor.read(layout.kubeRootDir(), Knob::kCpusetCpus)) in.fullCpus = cpus->cpus;
  if (auto pods = kubeletPods(opts)) {
    in.pods = std::move(*pods);
  } else {
    err << "koordlet restore: the kubelet's pod list: " << pods.error().message
        << "; per-pod knobs (quotas, shares, limits, burst) are left as they are\n";
    status = 1;
  }

  if (in.pods && opts.cpuWeightConversion == "auto") {
    // The weights restore writes (BE shares from requests), as the runtime converts.
    if (auto seen = probeCpuWeightConversion(*in.pods, layout, opts.paths.cgroupRoot, 64)) {
      executor.setCpuWeightConversion(seen->conversion);
      out << "restore: cpu.weight as the runtime converts shares (" << toString(seen->conversion)
          << ", " << seen->shares << " -> " << seen->weight << " in " << seen->dir << ")\n";
    }
  } else if (auto fixed = cpuWeightConversionFrom(opts.cpuWeightConversion)) {
    executor.setCpuWeightConversion(*fixed);
  }
  std::vector<CgroupWrite> writes = planRestore(in);
  if (layout.version() == CgroupVersion::kV2) {
    // An empty v2 cpuset.cpus inherits its parent's, as the kubelet leaves it: nothing
    // of ours to undo there, and the full set would pin it.
    std::erase_if(writes, [&](const CgroupWrite& w) {
      if (w.knob != Knob::kCpusetCpus) return false;
      auto text = executor.readNow(w.dir, w.knob);
      return text && text->empty();
    });
  }
  struct Before {
    std::string dir;
    Knob knob;
    std::string text;
  };
  std::vector<Before> before;
  for (const CgroupWrite& w : writes) {
    auto text = executor.readNow(w.dir, w.knob);
    if (text) before.push_back({w.dir, w.knob, *text});
  }
  const ExecutorStats stats = executor.apply(std::move(writes));
  size_t changed = 0;
  for (const Before& b : before) {
    const std::string file =
        cgroupFilePath(layout, opts.paths.cgroupRoot, b.dir, knobSpec(b.knob).file);
    if (opts.dryRun) {
      for (const KnobRecord& r : executor.explain(b.dir, false, b.knob)) {
        if (!r.written) continue;
        out << "dry-run: would write " << file << ": " << b.text << " -> "
            << executor.render(b.knob, *r.written) << "\n";
        ++changed;
      }
      continue;
    }
    auto after = executor.readNow(b.dir, b.knob);
    if (after && *after != b.text) {
      out << file << ": " << b.text << " -> " << *after << "\n";
      ++changed;
    }
  }
  const uint64_t failed = stats.invalid + stats.denied + stats.failed + stats.refused;
  if (failed > 0) status = 1;

  // Resctrl groups we created: removed (the kernel moves their tasks to the root group).
  const std::string stateFile = resctrlStateFile(opts);
  resctrl::GroupOwnership groups(stateFile, false);
  const std::set<std::string> owned = groups.groups();
  for (const std::string& group : owned) {
    const std::string dir = opts.paths.sysFs("resctrl/" + group);
    if (opts.dryRun) {
      out << "dry-run: would remove resctrl group " << dir << "\n";
      continue;
    }
    if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
      err << "koordlet restore: remove resctrl group " << dir << ": " << std::strerror(errno)
          << "\n";
      status = 1;
      continue;
    }
    out << "removed resctrl group " << dir << "\n";
    ++changed;
    if (auto st = groups.forget(group); !st) {
      err << "koordlet restore: " << stateFile << ": " << st.error().message << "\n";
    }
  }

  out << "restore: " << changed << (opts.dryRun ? " would change" : " changed") << ", "
      << stats.unchanged << " already held the kubelet's value"
      << (failed ? ", " + std::to_string(failed) + " failed (see above)" : "")
      << (stats.vanished ? ", " + std::to_string(stats.vanished) + " gone meanwhile" : "")
      << (stats.unsupported ? ", " + std::to_string(stats.unsupported) + " not on this kernel" : "")
      << "\n";
  return status;
}

}  // namespace koord
