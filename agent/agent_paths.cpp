// Where the agent writes, checked once at start (issue 45): a pod whose mounts or
// security context forbid a writer is told which, why, and what it costs, before
// the first write would fail, in one WARNING each; /config's "writablePaths" and
// koordlet_feature_supported{feature="writable_<name>"} say the same. The chart
// READMEs' "Privileges" sections say which setting enables each. Nothing is turned
// off here: each writer still tries, fails and counts as it always did (a mount the
// operator fixes later, a resctrl mounted later, works without a restart).
#include <cerrno>
#include <filesystem>

#include "agent/agent.h"
#include "base/read_file.h"
#include "base/writable_path.h"

namespace koord {
namespace {

// The dir a path is in; "." for a bare name (a socket relative to the working dir).
std::string parentDir(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

void Agent::checkWritablePaths() {
  struct Check {
    std::string name;  // the feature label: writable_<name>
    std::string path;
    bool probeFile;              // a file can be made there (else only the mount's flag is read)
    std::string cost;            // what does not work when it cannot be written
    bool writerCreates = false;  // its writer makes the dir when absent: made here first
    bool absentSaidByWriter = false;  // an absent dir is its writer's to say (once)
  };
  std::vector<Check> checks;
  std::error_code ec;
  if (!opts_.dryRun) {
    // On cgroup v1 the root is a tmpfs systemd remounts read-only once the controllers
    // are mounted below it: the controllers written are checked, not the root.
    bool v1 = false;
    for (const char* controller : {"cpu", "cpuset", "memory"}) {
      const std::string dir = opts_.paths.cgroup(controller);
      if (!std::filesystem::is_directory(dir, ec)) continue;
      v1 = true;
      checks.push_back({std::string("cgroup_") + controller, dir, false,
                        std::string("no ") + controller + " knob is written (cgroup v1)"});
    }
    if (!v1) {
      checks.push_back({"cgroup_root", opts_.paths.cgroupRoot, false,
                        "no QoS knob is written (--cgroup-root-dir)"});
    }
  }
  if (opts_.enableRuntimeHookServer && opts_.runtimeHooksNetwork == "unix") {
    checks.push_back({"hook_server_socket", parentDir(opts_.runtimeHooksAddr), true,
                      "koord-runtime-proxy cannot call the hook server (--runtime-hooks-addr)"});
  }
  if (opts_.enableRuntimeHookServer && !opts_.dryRun) {
    checks.push_back({"hook_server_config", opts_.runtimeHooksConfigPath, true,
                      "koordlet.json is not written: koord-runtime-proxy does not find the "
                      "hook server (--runtime-hooks-config-path)"});
  }
  if (!opts_.predictionCheckpointFilepath.empty()) {
    // The predictor says an absent dir itself when it restores (prediction/predict_server.h).
    checks.push_back({"prediction_checkpoints", opts_.predictionCheckpointFilepath, true,
                      "the peak models start cold after a restart "
                      "(--prediction-checkpoint-filepath)",
                      false, true});
  }
  if (!opts_.auditLogDir.empty()) {
    checks.push_back({"audit_log", opts_.auditLogDir, true,
                      "no audit log of writes and evictions (--audit-log-dir)", true});
  }
  // The resctrl record matters where resctrl can be used; it must outlive the pod, so
  // a dir that is not there (no host mount) is said, not made here.
  if (opts_.featureGates.enabled("RdtResctrl") && !opts_.dryRun &&
      std::filesystem::exists(opts_.paths.sysFs("resctrl"), ec)) {
    checks.push_back({"resctrl_state", parentDir(resctrlStateFile(opts_)), true,
                      "the resctrl groups this agent makes are not recorded on the host, so "
                      "a restarted agent cannot tell them from others' (--resctrl-state-file)"});
  }
  // GroupIdentity's switch is written only where the kernel has it and it is off.
  if (opts_.featureGates.enabled("GroupIdentity") && !opts_.dryRun) {
    const std::string sysctl = opts_.paths.proc("sys/kernel/sched_group_identity_enabled");
    auto text = readFile(sysctl, 64);
    if (text && text->find('1') == std::string::npos) {
      checks.push_back({"proc_sys_kernel", opts_.paths.proc("sys/kernel"), false,
                        "GroupIdentity's switch kernel.sched_group_identity_enabled is not set "
                        "(an unprivileged container's /proc/sys is read-only: set it on the "
                        "host, or run the pod privileged)"});
    }
  }
  writablePaths_ = nlohmann::json::object();
  std::string ok;
  for (const Check& c : checks) {
    std::string why;
    int err = 0;
    if (c.writerCreates) {
      std::filesystem::create_directories(c.path, ec);  // what fails shows in the probe
    }
    if (c.probeFile) {
      if (auto st = probeWritableDir(c.path); !st) {
        why = st.error().message;
        err = st.error().sysErrno;
      }
    } else if (auto ro = readOnlyMount(c.path); !ro) {
      why = ro.error().message;
    } else if (*ro) {
      why = c.path + ": mounted read-only";
    }
    writablePaths_[c.name] = {{"path", c.path}, {"writable", why.empty()}, {"why", why}};
    exporter_.setFeatureSupported("writable_" + c.name, why.empty());
    if (why.empty()) {
      ok += (ok.empty() ? "" : ", ") + c.name;
    } else if (!(c.absentSaidByWriter && err == ENOENT)) {
      KLOG_WARNING << "cannot write " << c.name << " here: " << why << ": " << c.cost;
    }
  }
  KLOG_INFO << "writable: " << (ok.empty() ? "nothing checked" : ok);
}

}  // namespace koord
