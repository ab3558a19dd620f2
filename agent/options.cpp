#include "agent/options.h"

#include <charconv>

#include <algorithm>
#include <utility>

#include "agent/flag_set.h"
#include "base/duration.h"
#include "base/log.h"
#include "base/quote.h"
#include "base/text_scan.h"
#include "kube/pod.h"
#include "qos/hook_runtime.h"

namespace koord {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

std::string durationText(nanoseconds d) { return formatGoDuration(d); }

// Host path defaults for agent_mode=hostMode (reference §1.2): the real host trees.
void useHostModePaths(HostPaths& p) {
  p.cgroupRoot = "/sys/fs/cgroup/";
  p.procRoot = "/proc/";
  p.sysRoot = "/sys/";
  p.sysFsRoot = "/sys/fs/";
  p.varRunRoot = "/var/run/";
  p.varLibKubeletRoot = "/var/lib/kubelet/";
  p.runRoot = "/run/";
}

// hostMode's other defaults: the hook server's socket and the runtime proxy's
// config dir on the host itself (koordlet keeps the pod's /host-var-run-koordlet
// socket path in host mode; ours follows the host like the config dir).
void useHostModeDefaults(Options& o) {
  useHostModePaths(o.paths);
  o.runtimeHooksAddr = "/var/run/koordlet/koordlet.sock";
  o.runtimeHooksConfigPath = "/etc/runtime/hookserver.d";
  // A host service keeps its models across reboots (the Debian package makes it).
  o.predictionCheckpointFilepath = "/var/lib/koordlet/prediction-checkpoints";
}

// A string flag that must be one of `allowed`.
FlagSet::Setter oneOf(std::string* target, std::vector<std::string> allowed) {
  return [target, allowed = std::move(allowed)](std::string_view v) -> Status {
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) {
      *target = std::string(v);
      return Ok{};
    }
    std::string want;
    for (size_t i = 0; i < allowed.size(); ++i) {
      want += i == 0 ? "" : (i + 1 == allowed.size() ? " or " : ", ");
      want += allowed[i];
    }
    return makeError("want " + want + ", got " + quoteText(v, 40));
  };
}

// A duration flag that must be > 0.
FlagSet::Setter positiveDuration(nanoseconds* target) {
  return [target](std::string_view v) -> Status {
    auto d = parseGoDuration(v);
    if (!d) return d.error();
    if (d->count() <= 0) return makeError("must be > 0, got " + quoteText(v));
    *target = *d;
    return Ok{};
  };
}

// A duration flag that must be >= 0.
FlagSet::Setter nonNegativeDuration(nanoseconds* target) {
  return [target](std::string_view v) -> Status {
    auto d = parseGoDuration(v);
    if (!d) return d.error();
    if (d->count() < 0) return makeError("must be >= 0, got " + quoteText(v));
    *target = *d;
    return Ok{};
  };
}

// An int flag in [min, max], parsed as Go's flag package parses ints.
FlagSet::Setter intInRange(int* target, int min, int max) {
  return [target, min, max](std::string_view v) -> Status {
    auto n = parseGoInt(v, 0, 64);
    if (!n) return n.error();
    if (*n < min || *n > max) {
      return makeError("must be " + std::to_string(min) + ".." + std::to_string(max) + ", got " +
                       quoteText(v));
    }
    *target = static_cast<int>(*n);
    return Ok{};
  };
}

// A TCP port in an int field, parsed as Go parses `base`-0 unsigned/signed ints.
FlagSet::Setter port(int* target, int min) {
  return [target, min](std::string_view v) -> Status {
    auto n = parseGoInt(v, 0, 64);
    if (!n) return n.error();
    if (*n < min || *n > 65535) {
      return makeError("port " + quoteText(v) + " out of range " + std::to_string(min) + "..65535");
    }
    *target = static_cast<int>(*n);
    return Ok{};
  };
}

// klog's -v: a decimal int32 (klog.Level); negative levels are refused here.
FlagSet::Setter verbosity(int* target) {
  return [target](std::string_view v) -> Status {
    auto n = parseGoInt(v, 10, 32);
    if (!n) return n.error();
    if (*n < 0) return makeError("must be >= 0, got " + quoteText(v));
    *target = static_cast<int>(*n);
    return Ok{};
  };
}

// klog's -stderrthreshold: a severity name in any case, or its number.
Status checkSeverity(std::string_view v) {
  std::string upper;
  for (char c : v) upper.push_back((c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c);
  if (upper == "INFO" || upper == "WARNING" || upper == "ERROR" || upper == "FATAL") {
    return Ok{};
  }
  if (parseGoInt(v, 10, 32)) return Ok{};
  return makeError("invalid severity " + quoteText(v) + ": want INFO, WARNING, ERROR or FATAL");
}

// klog's -vmodule: comma-separated pattern=N with N >= 0; empty items are skipped.
Status checkVmodule(std::string_view v) {
  text::Split split(v, ',');
  for (std::string_view item; split.next(item);) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == 0 || eq == std::string_view::npos || eq + 1 == item.size() ||
        item.find('=', eq + 1) != std::string_view::npos) {
      return makeError("invalid vmodule item " + quoteText(item) + ": want pattern=N");
    }
    auto level = parseGoInt(item.substr(eq + 1), 10, 32);
    if (!level || *level < 0) {
      return makeError("invalid vmodule item " + quoteText(item) + ": N must be an int >= 0");
    }
  }
  return Ok{};
}

// klog's -log_backtrace_at: "" or file.go:N with N > 0.
Status checkTraceLocation(std::string_view v) {
  if (v.empty()) return Ok{};
  const size_t colon = v.find(':');
  const bool shape = colon != std::string_view::npos &&
                     v.find(':', colon + 1) == std::string_view::npos &&
                     v.substr(0, colon).find('.') != std::string_view::npos;
  if (!shape) return makeError("invalid trace location " + quoteText(v) + ": want file.go:N");
  auto line = parseGoInt(v.substr(colon + 1), 10, 64);
  if (!line || *line <= 0) {
    return makeError("invalid trace location " + quoteText(v) + ": N must be a line > 0");
  }
  return Ok{};
}

// Kubernetes' mapStringBool syntax without a gate list: "k=bool,..."; used by
// --qos-extension-plugins, for which upstream registers no plugins.
Status checkMapStringBool(std::string_view v) {
  text::Split split(v, ',');
  for (std::string_view item; split.next(item);) {
    item = text::trim(item, " ");
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return makeError("malformed item " + quoteText(item) + ": want key=true or key=false");
    }
    std::string_view value = item.substr(eq + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (auto b = parseGoBool(value); !b) return b.error();
  }
  return Ok{};
}

std::string gateList() {
  std::vector<GateSpec> gates = FeatureGates::known();
  std::sort(gates.begin(), gates.end(), [](const GateSpec& a, const GateSpec& b) {
    return std::string_view(a.name) < std::string_view(b.name);
  });
  std::string out;
  for (const GateSpec& g : gates) {
    out += "\n";
    out += g.name;
    out += "=true|false (";
    out += g.stage == GateStage::kAlpha ? "ALPHA" : g.stage == GateStage::kBeta ? "BETA" : "GA";
    out += " - default=";
    out += g.defaultOn ? "true" : "false";
    out += ")";
    if (!g.implemented) out += " not implemented in this version: no effect";
  }
  out += "\nAllAlpha=true|false (sets every ALPHA gate not named explicitly)";
  out += "\nAllBeta=true|false (sets every BETA gate not named explicitly)";
  return out;
}

// Bound to Options fields already, but the module that reads them lands with a
// later milestone; until then setting them changes nothing, so say so.
constexpr const char* kNotYetUsed[] = {
    "run-root-dir",  // nothing reads the host's /run yet
};

// Registers every flag koordlet has (reference §1.1-§1.5), controller-runtime's
// --kubeconfig, klog's flags and our own, bound into `o`. Defaults come from the
// values already in `o` (host paths already switched for hostMode).
void registerFlags(FlagSet& fs, Options& o, bool /*hostMode: its defaults are in o*/) {
  using T = FlagType;

  // §1.1 server and API client.
  fs.stringVar(&o.addr, "addr",
               "HTTP listen address for /metrics and the agent's other endpoints.");
  fs.notImplemented("enable-pprof", T::kBool, "false", "Serve Go-style pprof on --pprof-addr.");
  fs.notImplemented("pprof-addr", T::kString, ":9317", "Listen address of the pprof server.");
  fs.doubleVar(&o.kubeApiQps, "kube-api-qps",
               "QPS limit for kube-apiserver requests (<= 0: no limit).");
  fs.intVar(&o.kubeApiBurst, "kube-api-burst", "Burst limit for kube-apiserver requests.");
  fs.notImplemented("configmap-name", T::kString, "koordlet-config",
                    "Name of the koordlet ConfigMap (unused by koordlet too).");
  fs.notImplemented("configmap-namespace", T::kString, "koordinator-system",
                    "Namespace of the koordlet ConfigMap (unused by koordlet too).");
  fs.funcVar(
      "feature-gates", "mapStringBool", "",
      "Comma-separated Name=true|false pairs for alpha/beta features. Options are:" + gateList(),
      [&o](std::string_view v) { return o.featureGates.set(v); });
  fs.notImplementedFunc("qos-extension-plugins", "mapStringBool", "",
                        "Name=true|false pairs for QoS extension plugins (none are built in).",
                        checkMapStringBool);
  fs.stringVar(&o.kubeconfig, "kubeconfig",
               "Path to a kubeconfig; without it the in-cluster service account is used, and "
               "outside a cluster the agent runs standalone (no API server).");
  fs.stringVar(&o.serviceAccountDir, "service-account-dir",
               "Where the in-cluster service account's token and ca.crt are.");
  fs.durationVar(&o.kubeApiWatchTimeout, "kube-api-watch-timeout",
                 "Server-side timeout of a watch, jittered to [t, 2t); a watch silent 30 s past "
                 "it is replaced.");
  fs.durationVar(&o.kubeApiTimeout, "kube-api-timeout",
                 "Deadline of a kube-apiserver request other than a watch (list, get, update), "
                 "connect to last byte (<= 0: 10s).");
  fs.boolVar(&o.configOverridesNodeslo, "config-overrides-nodeslo",
             "Let the --config file win over the cluster's NodeSLO (by default the cluster's "
             "object wins and --config serves nodes without one).");

  // §1.2 host paths.
  auto pathHelp = [](const char* what, const char* hostModeDefault) {
    return std::string(what) + " With agent_mode=hostMode the default is " + hostModeDefault + ".";
  };
  fs.stringVar(&o.paths.cgroupRoot, "cgroup-root-dir",
               pathHelp("Root of the host's cgroup tree.", "/sys/fs/cgroup/"));
  fs.stringVar(&o.paths.sysRoot, "sys-root-dir",
               pathHelp("Where the host's /sys is mounted.", "/sys/"));
  fs.stringVar(&o.paths.sysFsRoot, "sys-fs-root-dir",
               pathHelp("Where the host's /sys/fs is mounted (resctrl lives here).", "/sys/fs/"));
  fs.stringVar(&o.paths.procRoot, "proc-root-dir",
               pathHelp("Where the host's /proc is mounted (needs hostPID).", "/proc/"));
  fs.stringVar(&o.paths.varRunRoot, "var-run-root-dir",
               pathHelp("Where the host's /var/run is mounted.", "/var/run/"));
  fs.stringVar(&o.paths.varLibKubeletRoot, "var-lib-kubelet-dir",
               pathHelp("Where the host's /var/lib/kubelet is mounted.", "/var/lib/kubelet/"));
  fs.stringVar(&o.paths.runRoot, "run-root-dir",
               pathHelp("Where the host's /run is mounted.", "/run/"));
  fs.notImplemented("containerd-endpoint", T::kString, "", "Fallback containerd socket.");
  fs.notImplemented("docker-endpoint", T::kString, "", "Fallback docker socket.");
  fs.notImplemented("pouch-endpoint", T::kString, "", "Fallback pouch socket.");
  fs.notImplemented("default-runtime-type", T::kString, "containerd",
                    "Runtime used to name containers in hook requests: containerd, docker, pouch.");
  fs.notImplemented("hami-core-library-directory-path", T::kString, "/usr/local/vgpu/libvgpu.so",
                    "Path of the HAMi vGPU core library.");
  fs.notImplemented("pod-resources-proxy-path", T::kString, "/var/run/koordlet/pod-resources",
                    "Directory of the pod-resources proxy socket.");
  fs.stringVar(&o.xpuDeviceInfosDir, "xpu-device-infos-dir",
               "Directory of device-info files (koord-device-daemon's, one JSON array of "
               "devices each) read every --node-topology-sync-interval with gate "
               "Accelerators: the Device comes from them when they list a device, from NVML "
               "otherwise. Files whose name starts with '.' (writers' temporary files) are "
               "skipped; a file that does not parse is named and its last good devices kept.");

  // §1.3 kubelet and states informer.
  fs.stringVar(&o.kubeletPreferredAddressType, "kubelet-preferred-address-type",
               "Node address type used to reach the kubelet: Hostname, ExternalIP, InternalIP, "
               "ExternalDNS or InternalDNS.");
  fs.durationVar(&o.kubeletSyncInterval, "kubelet-sync-interval",
                 "How often the pod list is read from the kubelet; <= 0 disables it.");
  fs.durationVar(&o.kubeletSyncTimeout, "kubelet-sync-timeout",
                 "Timeout of one request to the kubelet.");
  fs.boolVar(&o.kubeletInsecureTls, "kubelet-insecure-tls",
             "Use the kubelet's plain-HTTP read-only port. For testing only.");
  fs.funcVar("kubelet-read-only-port", "uint", std::to_string(o.kubeletReadOnlyPort),
             "The kubelet's read-only port, used with --kubelet-insecure-tls.",
             port(&o.kubeletReadOnlyPort, 0));
  fs.durationVar(&o.nodeTopologySyncInterval, "node-topology-sync-interval",
                 "How often the node topology (NodeResourceTopology and the CPU share pools "
                 "of the CPUSetAllocator hook) is computed and, when changed, reported; <= 0: "
                 "never (no share pools).");
  fs.boolVar(&o.disableQueryKubeletConfig, "disable-query-kubelet-config",
             "Do not read the kubelet's /configz (its CPU manager and topology manager): the "
             "CPU manager policy comes from --kubelet-cpu-manager-policy instead. Required "
             "with --kubelet-insecure-tls, whose read-only port has no /configz.");
  fs.notImplemented("report-interval", T::kDuration, "0s", "Deprecated; ignored by koordlet too.");
  fs.boolVar(&o.enableNodeMetricReport, "enable-node-metric-report",
             "Update the NodeMetric custom resource's status.");
  fs.notImplemented("enable-pod-taskids", T::kBool, "false", "Read container task ids.");
  fs.boolVar(&o.xpuEnforceCollectFromDeviceInfos, "xpu-enforce-collect-from-device-infos",
             "The Device lists only what --xpu-device-infos-dir's files list, never NVML's "
             "GPUs (NVML's metrics are still collected).");
  // Our additions: koordlet finds the secure port on the Node object.
  fs.funcVar("kubelet-secure-port", "int", std::to_string(o.kubeletSecurePort),
             "The kubelet's HTTPS port; when not given, the Node's "
             "status.daemonEndpoints.kubeletEndpoint.Port, else 10250.",
             [&o, set = port(&o.kubeletSecurePort, 1)](std::string_view v) {
               o.kubeletSecurePortSet = true;
               return set(v);
             });
  fs.stringVar(&o.kubeletAddr, "kubelet-addr",
               "Kubelet host to connect to; empty means NODE_IP, else the Node's address of "
               "--kubelet-preferred-address-type (with an API server), else 127.0.0.1.");
  fs.stringVar(&o.kubeletTokenFile, "kubelet-token-file", "Bearer token presented to the kubelet.");
  fs.stringVar(&o.kubeletCaFile, "kubelet-ca-file", "CA bundle that verifies the kubelet.");
  fs.boolVar(&o.kubeletSkipTlsVerify, "kubelet-skip-tls-verify",
             "Do not verify the kubelet's serving certificate (koordlet never does; kubelets "
             "commonly serve self-signed certificates). =false verifies it against "
             "--kubelet-ca-file and the node address.");

  // §1.4 collectors.
  fs.funcVar("collect-res-used-interval", "duration", durationText(o.collectResUsedInterval),
             "How often node and pod resource usage is collected; must be > 0.",
             positiveDuration(&o.collectResUsedInterval));
  fs.durationVar(&o.collectSysMetricOutdatedInterval, "collect-sys-metric-outdated-interval",
                 "Samples older than this are ignored in usage calculations.");
  fs.durationVar(&o.psiCollectorInterval, "psi-collector-interval",
                 "How often PSI (pressure stall) is collected.");
  fs.funcVar("collect-node-cpu-info-interval", "duration",
             durationText(o.collectNodeCpuInfoInterval),
             "How often node CPU info (model, hyper-threading, turbo, L3 mask) and NUMA memory "
             "are read again (koordlet_collect_node_{cpu,numa}_info_status count each); > 0.",
             positiveDuration(&o.collectNodeCpuInfoInterval));
  fs.notImplemented("collect-node-storage-info-interval", T::kDuration, "1s",
                    "How often node storage info is collected.");
  fs.notImplemented("cpi-collector-interval", T::kDuration, "1m0s", "How often CPI is collected.");
  fs.notImplemented("collect-cpi-timewindow", T::kDuration, "10s", "CPI sampling window.");
  fs.notImplemented("coldpage-collector-interval", T::kDuration, "5s",
                    "How often cold pages are collected.");
  fs.notImplemented("resctrl-collector-interval", T::kDuration, "10s",
                    "How often RDT metrics are collected.");
  fs.notImplemented("enable-pagecache-collector", T::kBool, "false",
                    "Collect page cache of node, pods and containers.");
  fs.notImplemented("enable-resctrl-collector", T::kBool, "false",
                    "Collect RDT metrics per QoS group.");

  // §1.4 metric cache (koordlet's embedded TSDB).
  fs.notImplemented("metric-gc-interval-seconds", T::kInt, "300", "Unused by koordlet too.");
  fs.notImplemented("metric-expire-seconds", T::kInt, "1800", "Unused by koordlet too.");
  fs.notImplemented("tsdb-path", T::kString, "/metric-data/", "Directory of the metric TSDB.");
  fs.notImplemented("tsdb-retention-duration", T::kDuration, "12h0m0s",
                    "How long metric data is kept.");
  fs.notImplemented("tsdb-enable-prometheus-metric", T::kBool, "true",
                    "Export the TSDB's own metrics.");
  fs.notImplemented("tsdb-stripe-size", T::kInt, "16384", "Entries of the series hash map.");
  fs.notImplemented("tsdb-max-bytes", T::kInt64, "104857600", "Maximum bytes of blocks to retain.");
  fs.notImplemented("tsdb-wal-segment-size", T::kInt, "1048576", "WAL segment size in bytes.");
  fs.notImplemented("tsdb-max-block-chunk-segment-size", T::kInt64, "5242880",
                    "Maximum size of a block chunk segment file.");
  fs.notImplemented("tsdb-min-block-duration", T::kDuration, "10m0s",
                    "Time range of head blocks before they are persisted.");
  fs.notImplemented("tsdb-max-block-duration", T::kDuration, "10m0s",
                    "Maximum time range of compacted blocks.");
  fs.notImplemented("tsdb-head-chunks-write-buffer-size", T::kInt, "1048576",
                    "Write buffer of the head chunks mapper, in bytes.");

  // §1.5 QoS manager.
  fs.intVar(&o.reconcileIntervalSeconds, "reconcile-interval-seconds",
            "Period of the CPU burst, memory QoS (gate CgroupReconcile) and resctrl (gate "
            "RdtResctrl) strategies, in seconds; <= 0 disables them.");
  fs.intVar(&o.cpuSuppressIntervalSeconds, "cpu-suppress-interval-seconds",
            "Period of BE CPU suppress, in seconds; <= 0 disables it.");
  fs.intVar(&o.cpuEvictIntervalSeconds, "cpu-evict-interval-seconds",
            "Period of CPU-based eviction (gates BECPUEvict, CPUEvict), in seconds; <= 0 "
            "disables it.");
  fs.intVar(&o.memoryEvictIntervalSeconds, "memory-evict-interval-seconds",
            "Period of memory-based eviction (gates BEMemoryEvict, MemoryEvict), in seconds; "
            "<= 0 disables it.");
  fs.intVar(&o.memoryEvictCoolTimeSeconds, "memory-evict-cool-time-seconds",
            "Minimum seconds between memory eviction rounds that evicted a pod.");
  fs.intVar(&o.cpuEvictCoolTimeSeconds, "cpu-evict-cool-time-seconds",
            "Minimum seconds between CPU eviction rounds that evicted a pod (also the delay "
            "before the first one after start).");
  fs.boolVar(&o.onlyEvictByApi, "only-evict-by-api",
             "Accepted for koordlet's arguments. koordlet-cpp always evicts through the "
             "Eviction API (koordlet's default, false, stops the containers through CRI and the "
             "kubelet restarts them); false is said once at start.");
  fs.int64Var(&o.evictionGracePeriodSeconds, "eviction-grace-period-seconds",
              "gracePeriodSeconds of the Evictions koordlet-cpp sends, for nodes under pressure; "
              "negative: the pod's own terminationGracePeriodSeconds.");

  // §1.5 resource executor.
  fs.intVar(&o.resourceForceUpdateSeconds, "resource-force-update-seconds",
            "How often, in seconds, a cgroup value the agent keeps is checked even if cached. "
            "A file already holding the value is not written, as koordlet; ours: a CPU list "
            "(cpuset.cpus) is rewritten this often even if unchanged, since the write "
            "re-applies the CPUs to every task's affinity.");
  fs.intVar(&o.resourceVerifySeconds, "resource-verify-seconds",
            "A cgroup file the agent has read or written is trusted to hold that value for this "
            "many seconds, then read again before the next write to it, so a value changed "
            "behind the agent's back is repaired within this time (0: read every file before "
            "every write; koordlet trusts its last write until the forced update).");

  // §1.5 runtime hooks.
  fs.boolVar(&o.enableRuntimeHookServer, "enable-runtime-hook-server",
             "Serve koord-runtime-proxy's RuntimeHookService (gRPC) and register it in "
             "--runtime-hooks-config-path (koordlet always does; ours: false turns it off).");
  fs.funcVar("runtime-hooks-network", "string", o.runtimeHooksNetwork,
             "Network of the runtime hook gRPC server: unix, tcp, tcp4 or tcp6.",
             oneOf(&o.runtimeHooksNetwork, {"unix", "tcp", "tcp4", "tcp6"}));
  fs.stringVar(&o.runtimeHooksAddr, "runtime-hooks-addr",
               "Listen address of the runtime hook gRPC server: a socket path (a stale socket "
               "there is replaced), or host:port for tcp. With agent_mode=hostMode the default "
               "is /var/run/koordlet/koordlet.sock (koordlet keeps the pod's path).");
  fs.stringVar(&o.runtimeHooksHostEndpoint, "runtime-hooks-host-endpoint",
               "The hook server's socket as the host sees it, written into the runtime proxy's "
               "config as remote-endpoint.");
  fs.funcVar("runtime-hooks-failure-policy", "string", o.runtimeHooksFailurePolicy,
             "Failure policy written into the runtime proxy's config: with Fail the proxy fails "
             "the CRI call when a hook call fails (or the agent is down); with Ignore it goes on "
             "with the kubelet's request unchanged.",
             oneOf(&o.runtimeHooksFailurePolicy, {"Ignore", "Fail"}));
  fs.funcVar("runtime-hooks-plugin-failure-policy", "string", "Ignore",
             "Ignore: a hook error is logged and the container is created without that "
             "hook's settings. Fail: the error fails the NRI CreateContainer / "
             "UpdateContainer call or the runtime proxy's hook call (FailedPrecondition), and "
             "with --runtime-hooks-failure-policy=Fail the container operation.",
             oneOf(&o.runtimeHooksPluginFailurePolicy, {"Ignore", "Fail"}));
  fs.stringVar(&o.runtimeHooksConfigPath, "runtime-hooks-config-path",
               "Directory the runtime proxy reads hook server configs from (the host's "
               "/etc/runtime/hookserver.d): koordlet.json is written there at start (not with "
               "--dry-run) and left on exit, as koordlet. With agent_mode=hostMode the default "
               "is /etc/runtime/hookserver.d.");
  fs.stringSliceVar(&o.runtimeHooksDisableStages, "runtime-hooks-disable-stages",
                    "Comma-separated hook stages left out of the runtime proxy's config (e.g. "
                    "PreUpdateContainerResources).");
  fs.boolVar(&o.enableNriRuntimeHook, "enable-nri-runtime-hook",
             "Serve runtime hooks as an NRI plugin.");
  fs.stringVar(&o.runtimeHooksNriSocketPath, "runtime-hooks-nri-socket-path",
               "NRI socket, relative to --var-run-root-dir.");
  fs.stringVar(&o.runtimeHooksNriPluginName, "runtime-hooks-nri-plugin-name",
               "Name this agent registers as an NRI plugin.");
  fs.stringVar(&o.runtimeHooksNriPluginIndex, "runtime-hooks-nri-plugin-index",
               "Index (ordering) of the NRI plugin.");
  fs.durationVar(&o.runtimeHooksNriConnectTimeout, "runtime-hooks-nri-connect-timeout",
                 "An NRI connection that stays up this long counts as established, and the "
                 "reconnect back-off starts again from its first delay (a little above "
                 "containerd's 5s registration timeout).");
  fs.durationVar(&o.runtimeHooksNriBackoffDuration, "runtime-hooks-nri-backoff-duration",
                 "First delay between NRI connection attempts.");
  fs.doubleVar(&o.runtimeHooksNriBackoffFactor, "runtime-hooks-nri-backoff-factor",
               "Growth factor of the delay between NRI connection attempts.");
  fs.notImplemented("runtime-hooks-nri-backoff-steps", T::kInt, "2147483647",
                    "Maximum number of NRI reconnect attempts. This agent retries forever.");
  fs.durationVar(&o.runtimeHooksNriBackoffCap, "runtime-hooks-nri-backoff-cap",
                 "Upper bound of the delay between NRI connection attempts (koordlet's is "
                 "practically unbounded; ours defaults to 30s so a restarted containerd is "
                 "found again within half a minute).");
  fs.durationVar(&o.runtimeHooksReconcileInterval, "runtime-hooks-reconcile-interval",
                 "How often the runtime hooks' reconciler re-applies what the hooks set, to "
                 "every pod and container; it also runs in the round after the kubelet's pod "
                 "list changes. koordlet re-applies pods and containers on each pod sync "
                 "(every --kubelet-sync-interval) and the kube-QoS level on this period; "
                 "koordlet-cpp has no kube-QoS level hooks. <= 0: the reconciler never runs.");
  fs.boolVar(&o.disableUnsetCpuQuota, "disable-unset-cpu-quota",
             "Do not set cfs quota to -1 for pods bound to a cpuset by the scheduler.");

  // §1.5 audit.
  fs.stringVar(
      &o.auditLogDir, "audit-log-dir",
      "Directory of the audit log of cgroup writes and evictions (audit.log, JSON lines); \"\" "
      "turns it off.");
  fs.notImplemented("audit-verbose", T::kInt, "3", "Verbosity of the audit log.");
  fs.intVar(&o.auditMaxDiskSpaceMb, "audit-max-disk-space-mb",
            "Disk space of the audit log, MB: the live file and one rotated file, each half.");
  fs.notImplemented("audit-max-concurrent-readers", T::kInt, "4",
                    "Concurrent readers of the audit log.");
  fs.notImplemented("audit-max-events-limit", T::kInt, "2048",
                    "Maximum events in one audit log response.");

  // §1.5 prediction.
  fs.stringVar(&o.predictionCheckpointFilepath, "prediction-checkpoint-filepath",
               "Directory of prediction checkpoints, one file per model, which a restarted "
               "agent reads so its models do not start cold. Not created: the DaemonSet mounts "
               "it; without it the models live in memory only (said once). \"\" turns "
               "checkpoints off.");
  fs.funcVar("prediction-cold-start-duration", "duration", durationText(o.prediction.coldStart),
             "Pods younger than this report no prod reclaimable; >= 0.",
             nonNegativeDuration(&o.prediction.coldStart));
  fs.funcVar("prediction-safety-margin-percent", "int",
             std::to_string(o.prediction.safetyMarginPercent),
             "Margin kept above the predicted peak, percent; 0..1000 (koordlet also takes a "
             "negative one, which predicts less than the peak).",
             intInRange(&o.prediction.safetyMarginPercent, 0, 1000));
  fs.funcVar("prediction-memory-histogram-decay-halflife", "duration",
             durationText(o.prediction.memoryHalfLife), "Half-life of memory samples; > 0.",
             positiveDuration(&o.prediction.memoryHalfLife));
  fs.funcVar("prediction-cpu-histogram-decay-halflife", "duration",
             durationText(o.prediction.cpuHalfLife), "Half-life of CPU samples; > 0.",
             positiveDuration(&o.prediction.cpuHalfLife));
  fs.funcVar("prediction-training-interval", "duration",
             durationText(o.prediction.trainingInterval),
             "Period of model training, and the window each round takes its P90 over; > 0.",
             positiveDuration(&o.prediction.trainingInterval));
  fs.funcVar("prediction-model-expiration-duration", "duration",
             durationText(o.prediction.modelExpiration),
             "A model not trained for this long is dropped with its checkpoint; > 0.",
             positiveDuration(&o.prediction.modelExpiration));
  fs.funcVar("prediction-model-checkpoint-interval", "duration",
             durationText(o.prediction.checkpointInterval),
             "A model is saved again at most this often; >= 0.",
             nonNegativeDuration(&o.prediction.checkpointInterval));
  fs.funcVar("prediction-model-checkpoint-max-per-step", "int",
             std::to_string(o.prediction.checkpointMaxPerStep),
             "Most models saved a minute; 0..4096 (0: none).",
             intInRange(&o.prediction.checkpointMaxPerStep, 0, 4096));

  // klog.
  fs.funcVar("v", "Level", std::to_string(o.verbosity), "Log verbosity (>= 0).",
             verbosity(&o.verbosity));
  fs.boolVar(&o.logToStderr, "logtostderr", "Log to standard error instead of files.");
  fs.notImplemented("alsologtostderr", T::kBool, "false",
                    "Log to standard error as well as files.");
  fs.notImplemented("log_dir", T::kString, "", "Directory of log files.");
  fs.notImplemented("log_file", T::kString, "", "Log file.");
  fs.notImplemented("log_file_max_size", T::kUint64, "1800",
                    "Maximum log file size in MB; 0 is unlimited.");
  fs.notImplementedFunc("stderrthreshold", "severity", "2",
                        "Lines at or above this severity also go to stderr when logging to "
                        "files.",
                        checkSeverity);
  fs.notImplemented("skip_headers", T::kBool, "false", "Omit the header of each log line.");
  fs.notImplemented("skip_log_headers", T::kBool, "false", "Omit headers of new log files.");
  fs.notImplemented("add_dir_header", T::kBool, "false",
                    "Add the source directory to the log header.");
  fs.notImplemented("one_output", T::kBool, "false",
                    "Write a line only to its own severity's log file.");
  fs.notImplementedFunc("log_backtrace_at", "traceLocation", ":0",
                        "Emit a stack trace when logging hits file.go:N.", checkTraceLocation);
  fs.notImplementedFunc("vmodule", "pattern=N,...", "",
                        "Per-file verbosity, comma-separated pattern=N.", checkVmodule);

  // Our own.
  fs.boolVar(&o.dryRun, "dry-run", "Compute and log cgroup writes without performing them.");
  fs.stringVar(&o.configFile, "config",
               "NodeSLO spec file (YAML or JSON: a spec, a NodeSLO object or the "
               "slo-controller-config ConfigMap), merged over koordlet's defaults and "
               "reloaded when it changes.");
  fs.stringVar(&o.nodeReservation, "node-reservation",
               "What the node keeps for itself, in the JSON of the node.koordinator.sh/reservation "
               "annotation ({\"resources\":{\"cpu\":\"2\"},\"reservedCPUs\":\"0-1\"}); CPU "
               "suppress never gives these to BE pods.");
  fs.stringVar(&o.nodeSystemQosResource, "node-system-qos-resource",
               "The CPUs of SYSTEM-QoS pods, in the JSON of the node's "
               "node.koordinator.sh/system-qos-resource annotation "
               "({\"cpuset\":\"0-1\",\"cpusetExclusive\":true}); exclusive ones (the "
               "default) are never given to BE pods by CPU suppress.");
  fs.funcVar("kubelet-cpu-manager-policy", "string", o.kubeletCpuManagerPolicy,
             "The kubelet's --cpu-manager-policy (none or static) when its /configz is not "
             "read (--disable-query-kubelet-config, --kubelet-insecure-tls; otherwise the "
             "kubelet's own, once it answers): with static, CPU suppress leaves BE pod "
             "cpusets whole and narrows only containers, the CPUSetAllocator hook leaves "
             "unpinned pods' cpusets alone, and the node topology reports the static "
             "kubelet's pinned CPUs.",
             [&o](std::string_view v) -> Status {
               if (v != "none" && v != "static") {
                 return makeError("must be none or static, not " + quoteText(v, 40));
               }
               o.kubeletCpuManagerPolicy = std::string(v);
               return Ok{};
             });
  fs.funcVar("node-allocatable-memory", "quantity", "",
             "The node's allocatable memory (e.g. 62Gi), the limit memory QoS throttles "
             "containers without a memory limit against; empty: the node's MemTotal.",
             [&o](std::string_view v) -> Status {
               if (v.empty()) {
                 o.nodeAllocatableMemory = 0;
                 return Ok{};
               }
               auto q = parseQuantity(v);
               if (!q || *q <= 0) return makeError("must be a positive quantity like 62Gi");
               o.nodeAllocatableMemory = *q;
               return Ok{};
             });
  fs.boolVar(&o.memoryQosV1SoftLimit, "memory-qos-v1-soft-limit",
             "On cgroup v1 kernels without memory.min/low (vanilla), give BE pods "
             "memory.soft_limit_in_bytes = their memory.low target, so global reclaim takes "
             "BE memory first. A hint to kswapd, not a guarantee: see docs/memory-qos-resctrl.md.");
  fs.funcVar("cpu-weight-conversion", "string", o.cpuWeightConversion,
             "cgroup v2: how cpu.shares become the cpu.weight the agent writes (BE pods' batch "
             "shares). auto: as the node's runtime converts, read off the first container it made "
             "whose two conversions differ (linear until then); linear: 1 + (s-2) x 9999 / 262142 "
             "(koordlet, runc before 1.3); quadratic: runc 1.3's and opencontainers/cgroups' "
             "curve (1024 shares -> 100). Ours: koordlet always uses linear.",
             oneOf(&o.cpuWeightConversion, {"auto", "linear", "quadratic"}));
  fs.boolVar(&o.resctrlMount, "resctrl-mount",
             "Mount resctrl at <sys-fs-root-dir>/resctrl when RDT is present but not mounted.");
  fs.stringVar(&o.resctrlStateFile, "resctrl-state-file",
               "Record of the resctrl groups this agent created (default "
               "/host-var-run-koordlet/resctrl-groups, the host's /var/run/koordlet that "
               "koordlet's DaemonSet mounts writable; with agent_mode=hostMode "
               "<var-run-root-dir>/koordlet/resctrl-groups); groups not in it are never "
               "touched.");
  fs.boolVar(&o.resctrlAdoptGroups, "resctrl-adopt-groups",
             "Take over existing LSR/LS/BE resctrl groups this agent did not create (e.g. "
             "left by koordlet) instead of leaving them alone.");
  fs.funcVar("metric-cache-node-retention", "duration", durationText(o.metricCacheNodeRetention),
             "How long the in-memory metric cache keeps node-level samples; must be > 0.",
             positiveDuration(&o.metricCacheNodeRetention));
  fs.funcVar("metric-cache-pod-retention", "duration", durationText(o.metricCachePodRetention),
             "How long the in-memory metric cache keeps pod and container samples; must be > 0.",
             positiveDuration(&o.metricCachePodRetention));
  fs.boolVar(&o.showVersion, "version", "Print the version and exit.");
  fs.boolVar(&o.checkOnly, "check",
             "Parse the flags and the --config file, print what was read and exit: 0 when both "
             "are valid, 2 (naming the flag or the file and field) when not. For installers and "
             "chart tests; touches nothing.");
}

}  // namespace

Result<Options> parseOptions(const std::vector<std::string>& args, const Environment& env) {
  Options opts;
  const bool hostMode = env.agentMode && *env.agentMode == "hostMode";
  if (hostMode) useHostModeDefaults(opts);
  {
    FlagSet fs;
    registerFlags(fs, opts, hostMode);
    if (Status st = fs.parse(args); !st) return st.error();
    for (const std::string& stage : opts.runtimeHooksDisableStages) {
      if (!parseHookStage(stage)) {
        return makeError("invalid value " + quoteText(stage, 40) +
                         " for flag -runtime-hooks-disable-stages: " +
                         "unknown hook stage (PreRunPodSandbox, PostStopPodSandbox, "
                         "PreCreateContainer, PreStartContainer, PostStartContainer, "
                         "PostStopContainer, PreUpdateContainerResources, PreRemoveRunPodSandbox)");
      }
    }
    opts.showHelp = fs.helpRequested();
    opts.ignored = fs.notImplementedGiven();
    for (const char* name : kNotYetUsed) {
      if (fs.isGiven(name)) opts.ignored.emplace_back(name);
    }
    // Logging to files is klog's; this agent always logs to stderr.
    if (fs.isGiven("logtostderr") && !opts.logToStderr) opts.ignored.emplace_back("logtostderr");
  }
  if (env.nriPluginSocket) {
    const std::string& text = *env.nriPluginSocket;
    int fd = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), fd);
    if (ec != std::errc{} || end != text.data() + text.size() || fd < 0) {
      return makeError("NRI_PLUGIN_SOCKET: want a file descriptor number, got \"" + text + "\"");
    }
    opts.nriLaunchedFd = fd;
    opts.enableNriRuntimeHook = true;  // the runtime started us to be its plugin
    if (env.nriPluginIdx && !env.nriPluginIdx->empty()) {
      opts.runtimeHooksNriPluginIndex = *env.nriPluginIdx;
    }
    if (env.nriPluginName && !env.nriPluginName->empty()) {
      std::string name = *env.nriPluginName;
      // containerd 1.7.0-1.7.6 pass the full "<idx>-<name>".
      const std::string prefix = opts.runtimeHooksNriPluginIndex + "-";
      if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) {
        name.erase(0, prefix.size());
      }
      opts.runtimeHooksNriPluginName = name;
    }
  }
  opts.hostMode = hostMode;
  opts.nodeName = env.nodeName && !env.nodeName->empty() ? *env.nodeName : env.hostname;
  opts.nodeIp = env.nodeIp.value_or("");
  opts.kubernetesServiceHost = env.kubernetesServiceHost.value_or("");
  opts.kubernetesServicePort = env.kubernetesServicePort.value_or("");
  return opts;
}

std::vector<std::string> ineffectiveSettings(const Options& o) {
  std::vector<std::string> out;
  for (const auto& flag : o.ignored) {
    out.push_back("flag -" + flag + " has no effect in this version (accepted for koordlet " +
                  "compatibility); ignored");
  }
  for (const auto& gate : o.featureGates.enabledNotImplemented()) {
    out.push_back("feature gate " + gate + " is enabled but has no effect in this version (not " +
                  "implemented; accepted for koordlet compatibility)");
  }
  return out;
}

void logStartSettings(const Options& o) {
  for (const auto& line : ineffectiveSettings(o)) KLOG_WARNING << line;
  std::string inEffect;
  for (const auto& [gate, on] : o.featureGates.effective()) {
    if (on && FeatureGates::implemented(gate)) inEffect += (inEffect.empty() ? "" : ",") + gate;
  }
  KLOG_INFO << "feature gates in effect: " << (inEffect.empty() ? "none" : inEffect);
}

nlohmann::json settingsJson(const Options& o) {
  nlohmann::json gates = nlohmann::json::object();
  for (const auto& [name, on] : o.featureGates.effective()) {
    gates[name] = {{"enabled", on}, {"implemented", FeatureGates::implemented(name)}};
  }
  nlohmann::json j;
  j["featureGates"] = std::move(gates);
  j["flagsWithoutEffect"] = o.ignored;
  return j;
}

std::string hostModeKubeletAdvice(const Options& o, bool tokenFileExists) {
  if (!o.hostMode || tokenFileExists || o.kubeletInsecureTls ||
      o.kubeletSyncInterval <= nanoseconds::zero()) {
    return "";
  }
  return "host mode: kubelet token file " + o.kubeletTokenFile +
         " does not exist (the default is a pod's service-account token; a host has none), so "
         "the kubelet's pod list cannot be read and pods stay unknown; node metrics go on. On a "
         "host with a kubelet, set --kubelet-token-file "
         "(a token allowed to get nodes/proxy), and --kubelet-addr when the kubelet is not at " +
         (o.kubeletAddr.empty() ? (o.nodeIp.empty() ? std::string("127.0.0.1") : o.nodeIp)
                                : o.kubeletAddr) +
         "; or --kubelet-insecure-tls for its read-only port " +
         std::to_string(o.kubeletReadOnlyPort) +
         ". Without a kubelet, --kubelet-sync-interval=0 turns the pod sync off.";
}

std::string versionLine(std::string_view release, std::string_view commit) {
  std::string out = "koordlet-cpp " + std::string(release);
  if (!commit.empty() && commit != release) out += " (git " + std::string(commit) + ")";
  return out;
}

std::string usageText() {
  Options scratch;
  FlagSet fs;
  registerFlags(fs, scratch, /*hostMode=*/false);
  return "Usage of koordlet:\n"
         "  koordlet [flags]                 run the agent\n"
         "  koordlet explain [--addr=HOST:PORT] (--pod=NS/NAME | --uid=UID | --path=DIR) "
         "[--knob=FILE] [--json]\n"
         "                                   ask a running agent why its knobs hold their "
         "values (GET /explain)\n"
         "  koordlet restore [flags]         put every knob the agent owns back to the "
         "kubelet's values (no flags: the running agent's)\n\n" +
         fs.usage();
}

std::vector<FlagDoc> flagDocs() {
  // Registered once per mode: the flag set is the same, some defaults are not.
  Options daemonSet;
  FlagSet fs;
  registerFlags(fs, daemonSet, /*hostMode=*/false);
  Options host;
  useHostModeDefaults(host);
  FlagSet hostFs;
  registerFlags(hostFs, host, /*hostMode=*/true);
  const std::vector<FlagInfo> hostFlags = hostFs.list();

  std::vector<FlagDoc> out;
  for (const FlagInfo& f : fs.list()) {
    FlagDoc d;
    d.name = f.name;
    d.typeName = f.typeName;
    d.defaultText = f.defaultText;
    d.hostModeDefault = f.defaultText;
    for (const FlagInfo& h : hostFlags) {
      if (h.name == f.name) d.hostModeDefault = h.defaultText;
    }
    d.help = f.help;
    d.implemented = f.implemented;
    for (const char* name : kNotYetUsed) {
      if (f.name == name) d.implemented = false;
    }
    out.push_back(std::move(d));
  }
  if (!fs.has("help") && !fs.has("h")) {
    FlagDoc help;
    help.name = "help";
    help.alias = "h";
    help.typeName = "bool";
    help.defaultText = help.hostModeDefault = "false";
    help.help = "Print the flags with their types, defaults and meanings, and exit.";
    out.push_back(std::move(help));
  }
  return out;
}

}  // namespace koord
