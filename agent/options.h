// Options: the agent's command line, with koordlet's flag names and defaults
// (reference koordlet.md §1). Parsing follows Go's flag package: one or two dashes,
// "-name=value" or "-name value", bare booleans, Go durations. Flags koordlet has
// but this agent does not implement yet are accepted and reported in `ignored`
// so main() can warn once about each.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/feature_gates.h"
#include "base/host_paths.h"
#include "base/result.h"
#include "prediction/peak_models.h"

namespace koord {

// What main() read from the environment; nothing below main() reads env itself.
struct Environment {
  std::optional<std::string> nodeName;   // NODE_NAME
  std::optional<std::string> nodeIp;     // NODE_IP (downward API status.hostIP)
  std::optional<std::string> agentMode;  // agent_mode; "hostMode" switches path defaults
  std::string hostname;                  // fallback node name
  // Set when the container runtime launched us as a pre-installed NRI plugin
  // (reference nri.md §1): the pre-connected socket's fd, our index and name.
  std::optional<std::string> nriPluginSocket;  // NRI_PLUGIN_SOCKET
  std::optional<std::string> nriPluginIdx;     // NRI_PLUGIN_IDX
  std::optional<std::string> nriPluginName;  // NRI_PLUGIN_NAME ("name", or "NN-name" before 1.7.7)
  // In a pod: where the API server's service is (the in-cluster configuration).
  std::optional<std::string> kubernetesServiceHost;  // KUBERNETES_SERVICE_HOST
  std::optional<std::string> kubernetesServicePort;  // KUBERNETES_SERVICE_PORT
};

struct Options {
  // Server
  std::string addr = ":9316";
  // Kubernetes API (§1.1): --kubeconfig, else the in-cluster service account, else
  // standalone (no API server).
  std::string kubeconfig;
  double kubeApiQps = 20;
  int kubeApiBurst = 30;
  std::string serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
  std::string kubernetesServiceHost;  // from the environment
  std::string kubernetesServicePort;
  // The server-side timeout of a watch (jittered to [t, 2t)), as client-go's 5 min.
  std::chrono::nanoseconds kubeApiWatchTimeout = std::chrono::minutes(5);
  // The deadline of every other kube-apiserver request (list, get, update).
  std::chrono::nanoseconds kubeApiTimeout = std::chrono::seconds(10);
  bool enableNodeMetricReport = true;
  // --config wins over the cluster's NodeSLO (default: the cluster's object wins).
  bool configOverridesNodeslo = false;
  // Host paths (--cgroup-root-dir, --proc-root-dir, --sys-root-dir, --sys-fs-root-dir,
  // --var-run-root-dir, --run-root-dir, --var-lib-kubelet-dir)
  HostPaths paths;
  FeatureGates featureGates;
  // Collectors
  std::chrono::nanoseconds collectResUsedInterval = std::chrono::seconds(1);
  std::chrono::nanoseconds collectSysMetricOutdatedInterval = std::chrono::seconds(10);
  std::chrono::nanoseconds psiCollectorInterval = std::chrono::seconds(10);
  // Kubelet
  std::string kubeletPreferredAddressType = "InternalIP";
  std::chrono::nanoseconds kubeletSyncInterval = std::chrono::seconds(10);
  std::chrono::nanoseconds collectNodeCpuInfoInterval = std::chrono::minutes(1);
  std::chrono::nanoseconds kubeletSyncTimeout = std::chrono::seconds(3);
  bool kubeletInsecureTls = false;
  std::chrono::nanoseconds nodeTopologySyncInterval = std::chrono::seconds(3);
  std::string xpuDeviceInfosDir = "/var/run/koordlet/xpu-device-infos/";
  bool xpuEnforceCollectFromDeviceInfos = false;
  bool disableQueryKubeletConfig = false;
  int kubeletReadOnlyPort = 10255;
  // Our additions for the secure port (koordlet takes it from the Node object).
  int kubeletSecurePort = 10250;
  bool kubeletSecurePortSet = false;  // given on the command line: the Node's port does not apply
  std::string kubeletAddr;            // overrides NODE_IP; empty = NODE_IP, else 127.0.0.1
  std::string kubeletTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string kubeletCaFile = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  bool kubeletSkipTlsVerify = true;  // as koordlet, which never verifies
  // QoS manager (§1.5)
  int reconcileIntervalSeconds = 1;    // CPU burst
  int cpuSuppressIntervalSeconds = 1;  // CPU suppress
  // Eviction (issue 17): koordlet's periods and cool-downs; we evict only through
  // the Eviction API, whatever --only-evict-by-api says (koordlet's default stops
  // the containers through CRI).
  int cpuEvictIntervalSeconds = 1;
  int memoryEvictIntervalSeconds = 1;
  int memoryEvictCoolTimeSeconds = 4;
  int cpuEvictCoolTimeSeconds = 20;
  bool onlyEvictByApi = false;
  // deleteOptions.gracePeriodSeconds of our Evictions; < 0: the pod's own.
  int64_t evictionGracePeriodSeconds = -1;
  // Executor
  int resourceForceUpdateSeconds = 60;
  int resourceVerifySeconds = 10;  // ours: re-read a cgroup file we know at least this often
  std::string auditLogDir = "/var/log/koordlet";
  int auditMaxDiskSpaceMb = 16;
  // Peak prediction (prediction/): koordlet's --prediction-* flags.
  std::string predictionCheckpointFilepath = "/prediction-checkpoints";
  prediction::PredictionConfig prediction;
  // NRI
  bool enableNriRuntimeHook = true;
  std::string runtimeHooksNriSocketPath = "nri/nri.sock";
  std::string runtimeHooksNriPluginName = "koordlet_nri";
  std::string runtimeHooksNriPluginIndex = "00";
  std::chrono::nanoseconds runtimeHooksNriConnectTimeout = std::chrono::seconds(6);
  std::chrono::nanoseconds runtimeHooksNriBackoffDuration = std::chrono::seconds(1);
  double runtimeHooksNriBackoffFactor = 2.0;
  std::chrono::nanoseconds runtimeHooksNriBackoffCap = std::chrono::seconds(30);
  std::chrono::nanoseconds runtimeHooksReconcileInterval = std::chrono::seconds(10);
  std::string runtimeHooksPluginFailurePolicy = "Ignore";  // Ignore | Fail
  // koord-runtime-proxy's hook server (runtimeproxy/).
  bool enableRuntimeHookServer = true;
  std::string runtimeHooksNetwork = "unix";
  std::string runtimeHooksAddr = "/host-var-run-koordlet/koordlet.sock";
  std::string runtimeHooksHostEndpoint = "/var/run/koordlet/koordlet.sock";
  std::string runtimeHooksFailurePolicy = "Ignore";  // written into koordlet.json
  std::string runtimeHooksConfigPath = "/host-etc-hookserver/";
  std::vector<std::string> runtimeHooksDisableStages;
  bool disableUnsetCpuQuota = false;
  // Launched by the runtime (NRI_PLUGIN_SOCKET): the socket's fd. The plugin name and
  // index then come from NRI_PLUGIN_NAME / NRI_PLUGIN_IDX.
  std::optional<int> nriLaunchedFd;
  // Logging (klog)
  int verbosity = 0;  // --v
  bool logToStderr = true;
  // Our own
  bool dryRun = false;
  std::string configFile;             // --config: NodeSLO spec
  std::string nodeReservation;        // --node-reservation: the reservation annotation's JSON
  std::string nodeSystemQosResource;  // --node-system-qos-resource: that annotation's JSON
  std::string kubeletCpuManagerPolicy = "none";
  // Memory QoS: node allocatable memory in bytes (0 = the node's MemTotal), and the
  // opt-in v1 soft-limit fallback for BE pods.
  int64_t nodeAllocatableMemory = 0;
  bool memoryQosV1SoftLimit = false;
  // cgroup v2 cpu.shares -> cpu.weight: "auto" (read off a container the runtime made),
  // "linear" (koordlet's) or "quadratic" (runc 1.3's); cgroupfs/cpu_weight.h.
  std::string cpuWeightConversion = "auto";
  // resctrl: mount the tree when absent; the record of groups we created; take over
  // LSR/LS/BE groups we did not create.
  bool resctrlMount = false;
  // "" = /host-var-run-koordlet/resctrl-groups (hostMode: <var-run-root>/koordlet/...)
  std::string resctrlStateFile;
  bool resctrlAdoptGroups = false;
  // In-memory metric cache (koordlet keeps a TSDB instead; these bound our rings).
  std::chrono::nanoseconds metricCacheNodeRetention = std::chrono::minutes(30);
  std::chrono::nanoseconds metricCachePodRetention = std::chrono::minutes(5);

  // Derived
  std::string nodeName;   // NODE_NAME, else hostname
  std::string nodeIp;     // NODE_IP, else empty
  bool hostMode = false;  // agent_mode=hostMode: on the host, not in a pod

  // Flags given on the command line that koordlet has and we accept but ignore.
  std::vector<std::string> ignored;
  bool showHelp = false;
  bool showVersion = false;
  // --check: parse the flags and the --config file, report, exit (0 valid, 2 not).
  bool checkOnly = false;
};

// Parses argv[1..] (without the program name). Errors name the flag and value.
Result<Options> parseOptions(const std::vector<std::string>& args, const Environment& env);

// What is accepted but changes nothing in this run, one sentence each: every flag in
// `ignored` (set on the command line, no effect), then every enabled feature gate
// this version does not implement. A flag left at its default is never named, nor
// is a disabled gate.
std::vector<std::string> ineffectiveSettings(const Options& o);

// At start: one warning per ineffectiveSettings() line, then one info line naming the
// gates in effect (enabled and implemented).
void logStartSettings(const Options& o);

// /config's account of flags and gates:
//   {"featureGates": {"BECPUSuppress": {"enabled": true, "implemented": true}, ...},
//    "flagsWithoutEffect": ["run-root-dir", ...]}
nlohmann::json settingsJson(const Options& o);

// With agent_mode=hostMode the kubelet defaults still name a pod's service-account
// files, which a host does not have. When the token file is missing (tokenFileExists
// false) and the secure port would be used, the one line main() logs at start: what
// is going on and which flags a bare-metal host sets. "" otherwise.
std::string hostModeKubeletAdvice(const Options& o, bool tokenFileExists);

// The --version line: "koordlet-cpp 0.1.0 (git b008e83)", the release (meson's
// project version, as the .deb and the chart name it) and the commit it was built
// from; just "koordlet-cpp 0.1.0" when the build had no git (commit == release).
std::string versionLine(std::string_view release, std::string_view commit);

// The --help text: every flag with its type, default and meaning.
std::string usageText();

// One flag as docs/reference.md shows it, in both deployment modes.
struct FlagDoc {
  std::string name;             // without dashes
  std::string alias;            // another spelling ("h" for "help"), or ""
  std::string typeName;         // "bool", "string", "duration", ...
  std::string defaultText;      // DaemonSet mode, as --help writes it (strings quoted)
  std::string hostModeDefault;  // with agent_mode=hostMode
  std::string help;             // may hold '\n' (the feature gate list)
  // false: accepted for koordlet compatibility (or bound to a module that has not
  // landed) and has no effect.
  bool implemented = true;
};

// Every flag parseOptions() accepts, sorted by name, then the -h/--help builtin.
std::vector<FlagDoc> flagDocs();

}  // namespace koord
