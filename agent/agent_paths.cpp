// Where the agent writes, checked once at start (issue 45): a pod whose mounts or
// security context forbid a writer is told which, why, and what it costs, before
// the first write would fail, in one WARNING each; /config's "writablePaths" and
// koordlet_feature_supported{feature="writable_<name>"} say the same. The chart
// READMEs' "Privileges" sections say which setting enables each. Nothing is turned
// off here: each writer still tries, fails and counts as it always did (a mount the
// operator fixes later, a resctrl mounted later, works without a restart).
#include <filesystem>

#include "agent/agent.h"
#include "base/writable_path.h"

namespace koord {
namespace {

std::string parentDir(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

}  // namespace

void Agent::checkWritablePaths() {
  struct Check {
    std::string name;  // the feature label: writable_<name>
    std::string path;
    bool probeFile;              // a file can be made there (else only the mount's flag is read)
    std::string cost;            // what does not work when it cannot be written
    bool writerCreates = false;  // its writer makes the dir when absent: made here first
  };
  std::vector<Check> checks;
  if (!opts_.dryRun) {
    checks.push_back({"cgroup_root", opts_.paths.cgroupRoot, false,
                      "no QoS knob is written (--cgroup-root-dir)"});
    const std::string v1cpu = opts_.paths.cgroup("cpu");
    if (std::filesystem::is_directory(v1cpu)) {
      checks.push_back({"cgroup_cpu", v1cpu, false, "no cpu knob is written (cgroup v1 cpu)"});
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
    checks.push_back({"prediction_checkpoints", opts_.predictionCheckpointFilepath, true,
                      "the peak models start cold after a restart "
                      "(--prediction-checkpoint-filepath)"});
  }
  if (!opts_.auditLogDir.empty()) {
    checks.push_back({"audit_log", opts_.auditLogDir, true,
                      "no audit log of writes and evictions (--audit-log-dir)", true});
  }
  if (opts_.featureGates.enabled("RdtResctrl") && !opts_.dryRun) {
    checks.push_back({"resctrl_state", parentDir(resctrlStateFile(opts_)), true,
                      "the resctrl groups this agent makes are not recorded, so it makes none "
                      "(--resctrl-state-file)",
                      true});
  }
  if (opts_.featureGates.enabled("GroupIdentity") && !opts_.dryRun) {
    checks.push_back({"proc_sys_kernel", opts_.paths.proc("sys/kernel"), false,
                      "GroupIdentity's switch kernel.sched_group_identity_enabled is not set "
                      "(an unprivileged container's /proc/sys is read-only: set it on the host, "
                      "or run the pod privileged)"});
  }
  writablePaths_ = nlohmann::json::object();
  std::string ok;
  for (const Check& c : checks) {
    std::string why;
    if (c.writerCreates) {
      std::error_code ec;  // what fails shows in the probe
      std::filesystem::create_directories(c.path, ec);
    }
    if (c.probeFile) {
      if (auto st = probeWritableDir(c.path); !st) why = st.error().message;
    } else if (auto ro = readOnlyMount(c.path); !ro) {
      why = ro.error().message;
    } else if (*ro) {
      why = c.path + ": mounted read-only";
    }
    writablePaths_[c.name] = {{"path", c.path}, {"writable", why.empty()}, {"why", why}};
    exporter_.setFeatureSupported("writable_" + c.name, why.empty());
    if (why.empty()) {
      ok += (ok.empty() ? "" : ", ") + c.name;
    } else {
      KLOG_WARNING << "cannot write " << c.name << " here: " << why << ": " << c.cost;
    }
  }
  KLOG_INFO << "writable: " << (ok.empty() ? "nothing checked" : ok);
}

}  // namespace koord
