#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "agent/options.h"
#include "base/read_file.h"
#include "tests/support/log_capture.h"
#include "tests/support/manifest_args.h"

namespace test_agent_options {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using Args = std::vector<std::string>;

namespace {

Environment nodeEnv() {
  Environment env;
  env.nodeName = "node-a";
  env.nodeIp = "10.0.0.7";
  env.hostname = "host-a";
  return env;
}

Options parsed(const Args& args, const Environment& env = nodeEnv()) {
  auto o = parseOptions(args, env);
  INFO((o ? std::string("ok") : o.error().message));
  REQUIRE(o.ok());
  return std::move(o).value();
}

std::string errorOf(const Args& args) {
  auto o = parseOptions(args, nodeEnv());
  REQUIRE_FALSE(o.ok());
  return o.error().message;
}

// The `- item` lines under the first `args:` key of a manifest. A line scan is
// enough for the flat, unquoted lists in koordinator's manifests.

// Every flag koordlet registers (reference §1.1-§1.5), controller-runtime's and klog's.
const std::vector<std::string> kKoordletFlags = {
    // §1.1
    "addr", "enable-pprof", "pprof-addr", "kube-api-qps", "kube-api-burst", "configmap-name",
    "configmap-namespace", "feature-gates", "qos-extension-plugins", "kubeconfig",
    // §1.2
    "cgroup-root-dir", "sys-root-dir", "sys-fs-root-dir", "proc-root-dir", "var-run-root-dir",
    "var-lib-kubelet-dir", "run-root-dir", "containerd-endpoint", "docker-endpoint",
    "pouch-endpoint", "default-runtime-type", "hami-core-library-directory-path",
    "pod-resources-proxy-path", "xpu-device-infos-dir",
    // §1.3
    "kubelet-preferred-address-type", "kubelet-sync-interval", "kubelet-sync-timeout",
    "kubelet-insecure-tls", "kubelet-read-only-port", "node-topology-sync-interval",
    "disable-query-kubelet-config", "report-interval", "enable-node-metric-report",
    "enable-pod-taskids", "xpu-enforce-collect-from-device-infos",
    // §1.4
    "collect-res-used-interval", "collect-sys-metric-outdated-interval",
    "collect-node-cpu-info-interval", "collect-node-storage-info-interval",
    "cpi-collector-interval", "collect-cpi-timewindow", "psi-collector-interval",
    "coldpage-collector-interval", "resctrl-collector-interval", "enable-pagecache-collector",
    "enable-resctrl-collector", "tsdb-path", "tsdb-retention-duration",
    "tsdb-enable-prometheus-metric", "tsdb-stripe-size", "tsdb-max-bytes", "tsdb-wal-segment-size",
    "tsdb-max-block-chunk-segment-size", "tsdb-min-block-duration", "tsdb-max-block-duration",
    "tsdb-head-chunks-write-buffer-size", "metric-gc-interval-seconds", "metric-expire-seconds",
    // §1.5
    "reconcile-interval-seconds", "cpu-suppress-interval-seconds", "cpu-evict-interval-seconds",
    "memory-evict-interval-seconds", "memory-evict-cool-time-seconds",
    "cpu-evict-cool-time-seconds", "only-evict-by-api", "resource-force-update-seconds",
    "runtime-hooks-network", "runtime-hooks-addr", "runtime-hooks-host-endpoint",
    "runtime-hooks-failure-policy", "runtime-hooks-plugin-failure-policy",
    "runtime-hooks-config-path", "runtime-hooks-disable-stages", "enable-nri-runtime-hook",
    "runtime-hooks-nri-socket-path", "runtime-hooks-nri-plugin-name",
    "runtime-hooks-nri-plugin-index", "runtime-hooks-nri-connect-timeout",
    "runtime-hooks-nri-backoff-duration", "runtime-hooks-nri-backoff-factor",
    "runtime-hooks-nri-backoff-steps", "runtime-hooks-nri-backoff-cap",
    "runtime-hooks-reconcile-interval", "disable-unset-cpu-quota", "audit-log-dir", "audit-verbose",
    "audit-max-disk-space-mb", "audit-max-concurrent-readers", "audit-max-events-limit",
    "prediction-checkpoint-filepath", "prediction-cold-start-duration",
    "prediction-safety-margin-percent", "prediction-memory-histogram-decay-halflife",
    "prediction-cpu-histogram-decay-halflife", "prediction-training-interval",
    "prediction-model-expiration-duration", "prediction-model-checkpoint-interval",
    "prediction-model-checkpoint-max-per-step",
    // klog
    "v", "logtostderr", "alsologtostderr", "log_dir", "log_file", "log_file_max_size",
    "stderrthreshold", "skip_headers", "skip_log_headers", "add_dir_header", "one_output",
    "log_backtrace_at", "vmodule"};

// Ours: implemented on top of koordlet's set.
const std::vector<std::string> kOwnFlags = {"dry-run",
                                            "enable-runtime-hook-server",
                                            "eviction-grace-period-seconds",
                                            "node-allocatable-memory",
                                            "memory-qos-v1-soft-limit",
                                            "cpu-weight-conversion",
                                            "resctrl-mount",
                                            "resctrl-state-file",
                                            "resctrl-adopt-groups",
                                            "config",
                                            "version",
                                            "kubelet-secure-port",
                                            "kubelet-addr",
                                            "kubelet-token-file",
                                            "kubelet-ca-file",
                                            "kubelet-skip-tls-verify",
                                            "metric-cache-node-retention",
                                            "metric-cache-pod-retention",
                                            "node-reservation",
                                            "node-system-qos-resource",
                                            "kubelet-cpu-manager-policy",
                                            "check",
                                            "service-account-dir",
                                            "kube-api-watch-timeout",
                                            "kube-api-timeout",
                                            "resource-verify-seconds",
                                            "config-overrides-nodeslo"};

// A valid value for a flag, by the type usageText() shows for it.
std::string sampleValue(const std::string& usage, const std::string& name) {
  const std::string head = "\n  -" + name;
  const size_t at = usage.find(head + " ");
  if (at == std::string::npos) return "true";  // booleans have no type word
  const size_t typeStart = at + head.size() + 1;
  const std::string type = usage.substr(typeStart, usage.find('\n', typeStart) - typeStart);
  if (type == "duration") return "2s";
  if (type == "int" || type == "uint" || type == "Level" || type == "float") return "3";
  if (type == "mapStringBool") return name == "feature-gates" ? "CPUBurst=true" : "X=true";
  if (type == "severity") return "INFO";
  if (type == "traceLocation") return "main.go:10";
  if (type == "pattern=N,...") return "foo*=2";
  if (name == "kubelet-cpu-manager-policy") return "static";
  if (name == "runtime-hooks-plugin-failure-policy") return "Fail";
  if (name == "runtime-hooks-failure-policy") return "Fail";
  if (name == "runtime-hooks-network") return "tcp";
  if (name == "cpu-weight-conversion") return "quadratic";
  if (name == "runtime-hooks-disable-stages") return "PreStartContainer,PostStopContainer";
  if (type == "quantity") return "62Gi";
  return "x";
}

}  // namespace

TEST_CASE("no arguments give koordlet's DaemonSet-mode defaults", "[options]") {
  Options o = parsed({});
  CHECK(o.addr == ":9316");
  CHECK(o.paths.cgroupRoot == "/host-cgroup/");
  CHECK(o.paths.procRoot == "/proc/");
  CHECK(o.paths.sysRoot == "/host-sys/");
  CHECK(o.paths.sysFsRoot == "/host-sys-fs/");
  CHECK(o.paths.varRunRoot == "/host-var-run/");
  CHECK(o.paths.runRoot == "/host-run/");
  CHECK(o.paths.varLibKubeletRoot == "/var/lib/kubelet/");
  CHECK(o.collectResUsedInterval == 1s);
  CHECK(o.collectSysMetricOutdatedInterval == 10s);
  CHECK(o.psiCollectorInterval == 10s);
  CHECK(o.kubeletPreferredAddressType == "InternalIP");
  CHECK(o.kubeletSyncInterval == 10s);
  CHECK(o.kubeletSyncTimeout == 3s);
  CHECK_FALSE(o.kubeletInsecureTls);
  CHECK(o.kubeletReadOnlyPort == 10255);
  CHECK(o.kubeletSecurePort == 10250);
  CHECK(o.kubeletSkipTlsVerify);  // koordlet's behaviour; =false verifies
  CHECK(o.resourceForceUpdateSeconds == 60);
  CHECK(o.enableNriRuntimeHook);
  CHECK(o.runtimeHooksNriSocketPath == "nri/nri.sock");
  CHECK(o.runtimeHooksNriPluginName == "koordlet_nri");
  CHECK(o.runtimeHooksNriPluginIndex == "00");
  CHECK(o.runtimeHooksNriConnectTimeout == 6s);
  CHECK(o.verbosity == 0);
  CHECK(o.logToStderr);
  CHECK_FALSE(o.dryRun);
  CHECK(o.featureGates.effective() == FeatureGates().effective());
  CHECK(o.ignored.empty());
  CHECK_FALSE(o.showHelp);
  CHECK_FALSE(o.showVersion);
}

TEST_CASE("agent_mode=hostMode switches host path defaults before flags apply", "[options]") {
  Environment env = nodeEnv();
  env.agentMode = "hostMode";
  Options o = parsed({}, env);
  CHECK(o.paths.cgroupRoot == "/sys/fs/cgroup/");
  CHECK(o.paths.procRoot == "/proc/");
  CHECK(o.paths.sysRoot == "/sys/");
  CHECK(o.paths.sysFsRoot == "/sys/fs/");
  CHECK(o.paths.varRunRoot == "/var/run/");
  CHECK(o.paths.runRoot == "/run/");
  CHECK(o.paths.varLibKubeletRoot == "/var/lib/kubelet/");

  Options flagged = parsed({"--cgroup-root-dir=/cg/"}, env);
  CHECK(flagged.paths.cgroupRoot == "/cg/");
  CHECK(flagged.paths.sysRoot == "/sys/");

  env.agentMode = "dsMode";
  CHECK(parsed({}, env).paths.cgroupRoot == "/host-cgroup/");
}

TEST_CASE("the node name comes from NODE_NAME, else the hostname", "[options]") {
  Environment env = nodeEnv();
  Options o = parsed({}, env);
  CHECK(o.nodeName == "node-a");
  CHECK(o.nodeIp == "10.0.0.7");
  env.nodeName = "";
  CHECK(parsed({}, env).nodeName == "host-a");
  env.nodeName.reset();
  env.nodeIp.reset();
  Options fallback = parsed({}, env);
  CHECK(fallback.nodeName == "host-a");
  CHECK(fallback.nodeIp.empty());
}

TEST_CASE("the official Helm chart's koordlet args parse", "[options]") {
  // charts: versions/v1.8.0/templates/koordlet.yaml, rendered with default values.
  Options o = parsed({"-addr=:9316", "-cgroup-root-dir=/host-cgroup/",
                      "-feature-gates=BECPUEvict=true,BEMemoryEvict=true,CgroupReconcile=true,"
                      "Accelerators=true",
                      "-runtime-hooks-host-endpoint=/var/run/koordlet/koordlet.sock",
                      "--logtostderr=true", "--v=4"});
  CHECK(o.addr == ":9316");
  CHECK(o.paths.cgroupRoot == "/host-cgroup/");
  CHECK(o.featureGates.enabled("BECPUEvict"));
  CHECK(o.featureGates.enabled("BEMemoryEvict"));
  CHECK(o.featureGates.enabled("CgroupReconcile"));
  CHECK(o.featureGates.enabled("Accelerators"));
  CHECK(o.featureGates.enabled("BECPUSuppress"));
  CHECK_FALSE(o.featureGates.enabled("CPUEvict"));
  CHECK(o.logToStderr);
  CHECK(o.verbosity == 4);
  CHECK(o.ignored.empty());
  CHECK(o.runtimeHooksHostEndpoint == "/var/run/koordlet/koordlet.sock");
}

TEST_CASE("the koordlet DaemonSet manifest's args parse", "[options]") {
  const char* fixtures = std::getenv("KOORDLET_FIXTURES");
  REQUIRE(fixtures != nullptr);
  const std::string path = std::string(fixtures) + "/koordinator/koordlet-daemonset.yaml";
  auto yaml = readFile(path);
  INFO(path);
  REQUIRE(yaml.ok());
  const std::vector<std::string> args = test::manifestArgs(*yaml);
  REQUIRE(args == std::vector<std::string>{
                      "-cgroup-root-dir=/host-cgroup/",
                      "-feature-gates=AllAlpha=true,AllBeta=true",
                      "-runtime-hooks-network=unix",
                      "-runtime-hooks-addr=/host-var-run-koordlet/koordlet.sock",
                      "-runtime-hooks-host-endpoint=/var/run/koordlet//koordlet.sock",
                      "--logtostderr=true",
                      "--v=4",
                  });
  Options o = parsed(args);
  CHECK(o.paths.cgroupRoot == "/host-cgroup/");
  for (const auto& [gate, on] : o.featureGates.effective()) {
    INFO(gate);
    CHECK(on);  // AllAlpha and AllBeta turn every gate on
  }
  CHECK(o.verbosity == 4);
  CHECK(o.logToStderr);
  // koordlet never verifies the kubelet's certificate; with its args neither do we
  // (tests/e2e/agent_dropin_test.cpp syncs pods from a self-signed kubelet).
  CHECK(o.kubeletSkipTlsVerify);
  // The runtime proxy's flags act since issue 31.
  CHECK(o.ignored.empty());
  CHECK(o.runtimeHooksNetwork == "unix");
  CHECK(o.runtimeHooksAddr == "/host-var-run-koordlet/koordlet.sock");
  CHECK(o.runtimeHooksHostEndpoint == "/var/run/koordlet//koordlet.sock");
}

TEST_CASE("implemented flags set their option", "[options]") {
  Options o = parsed({"--addr=127.0.0.1:9999",
                      "--proc-root-dir=/p/",
                      "--sys-root-dir=/s/",
                      "--sys-fs-root-dir=/sf/",
                      "--var-run-root-dir=/vr/",
                      "--run-root-dir=/r/",
                      "--var-lib-kubelet-dir=/k/",
                      "--collect-res-used-interval=500ms",
                      "--collect-sys-metric-outdated-interval=1m",
                      "--psi-collector-interval=3s",
                      "--kubelet-preferred-address-type=Hostname",
                      "--kubelet-sync-interval=0",
                      "--kubelet-sync-timeout=1.5s",
                      "--kubelet-insecure-tls",
                      "--kubelet-read-only-port=1234",
                      "--kubelet-secure-port=443",
                      "--kubelet-addr=127.0.0.1",
                      "--kubelet-token-file=/t",
                      "--kubelet-ca-file=/ca",
                      "--kubelet-skip-tls-verify=true",
                      "--resource-force-update-seconds=5",
                      "--reconcile-interval-seconds=3",
                      "--cpu-suppress-interval-seconds=0",
                      "--audit-log-dir=/a",
                      "--audit-max-disk-space-mb=4",
                      "--node-reservation={\"reservedCPUs\":\"0-1\"}",
                      "--node-system-qos-resource={\"cpuset\":\"2\"}",
                      "--kubelet-cpu-manager-policy=static",
                      "--enable-nri-runtime-hook=false",
                      "--runtime-hooks-nri-socket-path=/run/nri.sock",
                      "--runtime-hooks-nri-plugin-name=p",
                      "--runtime-hooks-nri-plugin-index=42",
                      "--runtime-hooks-nri-connect-timeout=10s",
                      "--runtime-hooks-nri-backoff-duration=250ms",
                      "--runtime-hooks-nri-backoff-factor=1.5",
                      "--runtime-hooks-nri-backoff-cap=1m",
                      "--runtime-hooks-plugin-failure-policy=Fail",
                      "--disable-unset-cpu-quota",
                      "--logtostderr=false",
                      "--v",
                      "6",
                      "--dry-run",
                      "--config",
                      "/etc/slo.yaml"});
  CHECK(o.addr == "127.0.0.1:9999");
  CHECK(o.paths.procRoot == "/p/");
  CHECK(o.paths.sysRoot == "/s/");
  CHECK(o.paths.sysFsRoot == "/sf/");
  CHECK(o.paths.varRunRoot == "/vr/");
  CHECK(o.paths.runRoot == "/r/");
  CHECK(o.paths.varLibKubeletRoot == "/k/");
  CHECK(o.collectResUsedInterval == 500ms);
  CHECK(o.collectSysMetricOutdatedInterval == 60s);
  CHECK(o.psiCollectorInterval == 3s);
  CHECK(o.kubeletPreferredAddressType == "Hostname");
  CHECK(o.kubeletSyncInterval == 0s);
  CHECK(o.kubeletSyncTimeout == 1500ms);
  CHECK(o.kubeletInsecureTls);
  CHECK(o.kubeletReadOnlyPort == 1234);
  CHECK(o.kubeletSecurePort == 443);
  CHECK(o.kubeletAddr == "127.0.0.1");
  CHECK(o.kubeletTokenFile == "/t");
  CHECK(o.kubeletCaFile == "/ca");
  CHECK(o.kubeletSkipTlsVerify);
  CHECK(o.resourceForceUpdateSeconds == 5);
  CHECK(o.reconcileIntervalSeconds == 3);
  CHECK(o.cpuSuppressIntervalSeconds == 0);
  CHECK(o.auditLogDir == "/a");
  CHECK(o.auditMaxDiskSpaceMb == 4);
  CHECK(o.nodeReservation == "{\"reservedCPUs\":\"0-1\"}");
  CHECK(o.nodeSystemQosResource == "{\"cpuset\":\"2\"}");
  CHECK(o.kubeletCpuManagerPolicy == "static");
  CHECK_FALSE(o.enableNriRuntimeHook);
  CHECK(o.runtimeHooksNriSocketPath == "/run/nri.sock");
  CHECK(o.runtimeHooksNriPluginName == "p");
  CHECK(o.runtimeHooksNriPluginIndex == "42");
  CHECK(o.runtimeHooksNriConnectTimeout == 10s);
  CHECK(o.runtimeHooksNriBackoffDuration == 250ms);
  CHECK(o.runtimeHooksNriBackoffFactor == 1.5);
  CHECK(o.runtimeHooksNriBackoffCap == 60s);
  CHECK(o.runtimeHooksPluginFailurePolicy == "Fail");
  CHECK(o.disableUnsetCpuQuota);
  CHECK_FALSE(o.logToStderr);
  CHECK(o.verbosity == 6);
  CHECK(o.dryRun);
  CHECK(o.configFile == "/etc/slo.yaml");
  // Bound, but read only by later milestones' modules: still reported once each.
  CHECK(o.ignored == std::vector<std::string>{"run-root-dir", "logtostderr"});
}

TEST_CASE("an unknown runtime hook failure policy is refused naming the flag", "[options]") {
  auto r = parseOptions({"--runtime-hooks-plugin-failure-policy=Abort"}, Environment{});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("runtime-hooks-plugin-failure-policy"));
  CHECK_THAT(r.error().message, Catch::Contains("Abort"));
}

TEST_CASE("the NRI defaults are koordlet's except the back-off cap", "[options]") {
  Options o = parsed({});
  CHECK(o.enableNriRuntimeHook);
  CHECK(o.runtimeHooksNriPluginIndex == "00");
  CHECK(o.runtimeHooksNriConnectTimeout == 6s);
  CHECK(o.runtimeHooksNriBackoffDuration == 1s);
  CHECK(o.runtimeHooksNriBackoffFactor == 2.0);
  CHECK(o.runtimeHooksNriBackoffCap == 30s);
  CHECK(o.runtimeHooksPluginFailurePolicy == "Ignore");
  CHECK_FALSE(o.disableUnsetCpuQuota);
}

TEST_CASE("koordlet flags this agent does not implement are accepted and listed once",
          "[options]") {
  Options o =
      parsed({"-enable-pprof", "--tsdb-path=/data", "--kubeconfig", "/kc", "--vmodule=nri*=4",
              "--stderrthreshold=WARNING", "-tsdb-path=/other", "--kube-api-qps=50.5",
              "--log_backtrace_at=main.go:12", "--qos-extension-plugins=Foo=true"});
  CHECK(o.ignored == std::vector<std::string>{"enable-pprof", "tsdb-path", "vmodule",
                                              "stderrthreshold", "log_backtrace_at",
                                              "qos-extension-plugins"});
  // The API client's flags work since issue 16.
  CHECK(o.kubeconfig == "/kc");
  CHECK(o.kubeApiQps == 50.5);
}

TEST_CASE("not-implemented flags still have their values checked", "[options]") {
  CHECK(errorOf({"--tsdb-retention-duration=12"}) ==
        "flag --tsdb-retention-duration: invalid duration \"12\": missing unit");
  CHECK(errorOf({"--kube-api-burst=lots"}) == "flag --kube-api-burst: invalid integer \"lots\"");
  CHECK(errorOf({"--enable-pprof=on"}) == "flag --enable-pprof: invalid boolean \"on\"");
  CHECK(errorOf({"--stderrthreshold=LOUD"}).find("flag --stderrthreshold: invalid severity") == 0);
  CHECK(errorOf({"--vmodule=foo"}).find("flag --vmodule: invalid vmodule item \"foo\"") == 0);
  CHECK(errorOf({"--vmodule=foo=-1"}).find("flag --vmodule:") == 0);
  CHECK(errorOf({"--log_backtrace_at=main:1"}).find("flag --log_backtrace_at:") == 0);
  CHECK(errorOf({"--log_file_max_size=-5"}).find("flag --log_file_max_size:") == 0);
  CHECK(errorOf({"--qos-extension-plugins=Foo"}).find("flag --qos-extension-plugins:") == 0);
  CHECK(errorOf({"--runtime-hooks-disable-stages=a\"b"})
            .find("flag --runtime-hooks-disable-stages:") == 0);
  CHECK(parsed({"--vmodule=", "--log_backtrace_at=", "--stderrthreshold=0"}).ignored.size() == 3);
}

TEST_CASE("feature gate errors name the flag and the gate", "[options]") {
  CHECK(errorOf({"--feature-gates=NoSuchGate=true"}) ==
        "flag --feature-gates: unrecognized feature gate \"NoSuchGate\"");
  CHECK(errorOf({"-feature-gates", "BECPUEvict=maybe"}) ==
        "flag --feature-gates: invalid value \"maybe\" for feature gate BECPUEvict: want true or "
        "false");
  // Repeated --feature-gates accumulate, explicit names beating AllAlpha in any order.
  Options o = parsed({"--feature-gates=Accelerators=false", "--feature-gates=AllAlpha=true"});
  CHECK_FALSE(o.featureGates.enabled("Accelerators"));
  CHECK(o.featureGates.enabled("BECPUEvict"));
}

TEST_CASE("verbosity must be a non-negative decimal", "[options]") {
  CHECK(errorOf({"--v=-1"}) == "flag --v: must be >= 0, got \"-1\"");
  CHECK(errorOf({"--v=high"}) == "flag --v: invalid integer \"high\"");
  CHECK(errorOf({"--v=0x2"}) == "flag --v: invalid integer \"0x2\"");
  CHECK(parsed({"-v=10"}).verbosity == 10);
}

TEST_CASE("the resource collection interval must be positive", "[options]") {
  CHECK(errorOf({"--collect-res-used-interval=0"}) ==
        "flag --collect-res-used-interval: must be > 0, got \"0\"");
  CHECK(errorOf({"--collect-res-used-interval=-1s"}) ==
        "flag --collect-res-used-interval: must be > 0, got \"-1s\"");
  CHECK(errorOf({"--collect-res-used-interval=1x"}) ==
        "flag --collect-res-used-interval: invalid duration \"1x\": unknown unit \"x\"");
}

TEST_CASE("kubelet ports must be in range", "[options]") {
  CHECK(errorOf({"--kubelet-secure-port=0"}) ==
        "flag --kubelet-secure-port: port \"0\" out of range 1..65535");
  CHECK(errorOf({"--kubelet-read-only-port=65536"}) ==
        "flag --kubelet-read-only-port: port \"65536\" out of range 0..65535");
  CHECK(errorOf({"--kubelet-read-only-port=x"}) ==
        "flag --kubelet-read-only-port: invalid integer \"x\"");
}

TEST_CASE("a boolean's value after a space is a stray argument, not its value", "[options]") {
  const std::string msg = errorOf({"-dry-run", "false"});
  CHECK(msg.find("unexpected argument \"false\": koordlet takes no positional arguments") == 0);
  CHECK(msg.find("--dry-run=false") != std::string::npos);
  CHECK_FALSE(parsed({"-dry-run=false"}).dryRun);
  CHECK(errorOf({"--no-such-flag"}) == "flag provided but not defined: --no-such-flag");
  CHECK(errorOf({"--addr"}) == "flag --addr: needs a value");
}

TEST_CASE("help and version are requests, not errors", "[options]") {
  CHECK(parsed({"--help"}).showHelp);
  CHECK(parsed({"-h"}).showHelp);
  CHECK(parsed({"-help"}).showHelp);
  CHECK(parsed({"--version"}).showVersion);
  CHECK_FALSE(parsed({"--version"}).showHelp);
}

TEST_CASE("every koordlet flag and ours is accepted with a value of its type", "[options]") {
  const std::string usage = usageText();
  for (const auto* list : {&kKoordletFlags, &kOwnFlags}) {
    for (const std::string& name : *list) {
      const std::string arg = "--" + name + "=" + sampleValue(usage, name);
      INFO(arg);
      auto o = parseOptions({arg}, nodeEnv());
      CHECK(o.ok());
    }
  }
}

TEST_CASE("help text lists every flag once, sorted, with its default", "[options]") {
  const std::string u = usageText();
  CHECK(u.rfind("Usage of koordlet:\n", 0) == 0);
  std::vector<std::string> listed;
  std::istringstream in(u);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("  -", 0) != 0) continue;
    listed.push_back(line.substr(3, line.find(' ', 3) - 3));
  }
  CHECK(std::is_sorted(listed.begin(), listed.end()));
  std::vector<std::string> expected = kKoordletFlags;
  expected.insert(expected.end(), kOwnFlags.begin(), kOwnFlags.end());
  std::sort(expected.begin(), expected.end());
  CHECK(listed == expected);

  // Defaults as Go prints them: strings quoted, durations in Go form, zero values omitted.
  CHECK(u.find("  -addr string\n") != std::string::npos);
  CHECK(u.find("(default \":9316\")") != std::string::npos);
  CHECK(u.find("  -cgroup-root-dir string\n    \tRoot of the host's cgroup tree. With "
               "agent_mode=hostMode the default is /sys/fs/cgroup/. (default \"/host-cgroup/\")") !=
        std::string::npos);
  CHECK(u.find("  -collect-res-used-interval duration\n") != std::string::npos);
  CHECK(u.find("must be > 0. (default 1s)\n") != std::string::npos);
  CHECK(u.find("(default 12h0m0s) (accepted for koordlet compatibility; not implemented)") !=
        std::string::npos);
  CHECK(u.find("  -runtime-hooks-nri-backoff-cap duration\n") != std::string::npos);
  CHECK(u.find("  -kube-api-qps float\n") != std::string::npos);
  CHECK(u.find("  -kubelet-read-only-port uint\n") != std::string::npos);
  CHECK(u.find("(default 10255)") != std::string::npos);
  CHECK(u.find("  -enable-nri-runtime-hook\n    \tServe runtime hooks as an NRI plugin. "
               "(default true)\n") != std::string::npos);
  CHECK(u.find("  -dry-run\n    \tCompute and log cgroup writes without performing them.\n") !=
        std::string::npos);
  CHECK(u.find("  -feature-gates mapStringBool\n") != std::string::npos);
  CHECK(u.find("\n    \tBECPUSuppress=true|false (BETA - default=true)") != std::string::npos);
  CHECK(u.find("\n    \tOOMScoreAdj=true|false (ALPHA - default=false)") != std::string::npos);
  CHECK(u.find("  -log_backtrace_at traceLocation\n") != std::string::npos);
  CHECK(u.find("(default :0)") != std::string::npos);
}

TEST_CASE("help text marks exactly the flags this agent does not implement", "[options]") {
  const std::string u = usageText();
  const std::string marker = "(accepted for koordlet compatibility; not implemented)";
  // The usage entry of one flag, from its "  -name" line to the next flag's.
  auto entry = [&](const std::string& name) -> std::string {
    size_t start = u.find("\n  -" + name + " ");
    if (start == std::string::npos) start = u.find("\n  -" + name + "\n");
    if (start == std::string::npos) return "";
    const size_t end = u.find("\n  -", start + 1);
    return u.substr(start, end == std::string::npos ? std::string::npos : end - start);
  };
  for (const char* implemented : {"addr",
                                  "feature-gates",
                                  "cgroup-root-dir",
                                  "proc-root-dir",
                                  "kubelet-sync-interval",
                                  "kubelet-read-only-port",
                                  "collect-res-used-interval",
                                  "psi-collector-interval",
                                  "resource-force-update-seconds",
                                  "enable-nri-runtime-hook",
                                  "runtime-hooks-nri-connect-timeout",
                                  "v",
                                  "logtostderr",
                                  "dry-run",
                                  "config",
                                  "version",
                                  "kubelet-secure-port",
                                  "kubelet-skip-tls-verify",
                                  "reconcile-interval-seconds",
                                  "cpu-suppress-interval-seconds",
                                  "audit-log-dir",
                                  "audit-max-disk-space-mb",
                                  "node-reservation",
                                  "node-system-qos-resource",
                                  "kubelet-cpu-manager-policy",
                                  "kubeconfig",
                                  "kube-api-qps",
                                  "kube-api-burst",
                                  "enable-node-metric-report",
                                  "kubelet-preferred-address-type"}) {
    INFO(implemented);
    const std::string e = entry(implemented);
    REQUIRE_FALSE(e.empty());
    CHECK(e.find(marker) == std::string::npos);
  }
  for (const char* ignored :
       {"enable-pprof", "tsdb-path", "audit-verbose", "collect-node-storage-info-interval",
        "vmodule", "stderrthreshold", "qos-extension-plugins", "alsologtostderr"}) {
    INFO(ignored);
    CHECK(entry(ignored).find(marker) != std::string::npos);
  }
}

TEST_CASE("--var-lib-kubelet-dir and the node topology flags set their options", "[options]") {
  Environment env;
  env.hostname = "h";
  auto o = parseOptions({"--var-lib-kubelet-dir=/x", "--node-topology-sync-interval=10s",
                         "--disable-query-kubelet-config", "--addr=:1"},
                        env);
  REQUIRE(o.ok());
  CHECK(o->paths.varLibKubeletRoot == "/x");
  CHECK(o->nodeTopologySyncInterval == std::chrono::seconds(10));
  CHECK(o->disableQueryKubeletConfig);
  CHECK(o->ignored.empty());
  auto d = parseOptions({}, env);
  REQUIRE(d.ok());
  CHECK(d->nodeTopologySyncInterval == std::chrono::seconds(3));  // koordlet's default
  CHECK_FALSE(d->disableQueryKubeletConfig);
}

TEST_CASE("--logtostderr=false is reported: the agent always logs to stderr", "[options]") {
  Environment env;
  env.hostname = "h";
  auto o = parseOptions({"--logtostderr=false"}, env);
  REQUIRE(o.ok());
  REQUIRE(o->ignored.size() == 1);
  CHECK(o->ignored[0] == "logtostderr");
  auto fine = parseOptions({"--logtostderr=true"}, env);
  REQUIRE(fine.ok());
  CHECK(fine->ignored.empty());
}

TEST_CASE("--kubelet-cpu-manager-policy accepts only the kubelet's none and static", "[options]") {
  Environment env;
  env.hostname = "h";
  auto o = parseOptions({}, env);
  REQUIRE(o.ok());
  CHECK(o->kubeletCpuManagerPolicy == "none");
  auto bad = parseOptions({"--kubelet-cpu-manager-policy=dynamic"}, env);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("kubelet-cpu-manager-policy") != std::string::npos);
  CHECK(bad.error().message.find("none or static") != std::string::npos);
}

TEST_CASE("memory QoS and resctrl flags parse, and a bad allocatable memory names the flag",
          "[options]") {
  Environment env;
  env.hostname = "h";
  auto o =
      parseOptions({"--node-allocatable-memory=62Gi", "--memory-qos-v1-soft-limit",
                    "--resctrl-mount", "--resctrl-state-file=/run/x", "--resctrl-adopt-groups"},
                   env);
  REQUIRE(o.ok());
  CHECK(o->nodeAllocatableMemory == int64_t{62} << 30);
  CHECK(o->memoryQosV1SoftLimit);
  CHECK(o->resctrlMount);
  CHECK(o->resctrlStateFile == "/run/x");
  CHECK(o->resctrlAdoptGroups);
  auto defaults = parseOptions({}, env);
  REQUIRE(defaults.ok());
  CHECK(defaults->nodeAllocatableMemory == 0);
  CHECK_FALSE(defaults->memoryQosV1SoftLimit);
  CHECK_FALSE(defaults->resctrlMount);
  CHECK_FALSE(defaults->resctrlAdoptGroups);
  auto bad = parseOptions({"--node-allocatable-memory=lots"}, env);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("node-allocatable-memory"));
}

TEST_CASE("a runtime-launched plugin takes its socket, index and name from the environment",
          "[options]") {
  Environment env = nodeEnv();
  env.nriPluginSocket = "3";
  env.nriPluginIdx = "20";
  env.nriPluginName = "koordlet";
  Options o = parsed({"--enable-nri-runtime-hook=false"}, env);
  REQUIRE(o.nriLaunchedFd == 3);
  CHECK(o.enableNriRuntimeHook);  // the runtime started us to be its plugin
  CHECK(o.runtimeHooksNriPluginIndex == "20");
  CHECK(o.runtimeHooksNriPluginName == "koordlet");
  // containerd 1.7.0-1.7.6 pass the full <idx>-<name>.
  env.nriPluginName = "20-koordlet";
  CHECK(parsed({}, env).runtimeHooksNriPluginName == "koordlet");
  env.nriPluginSocket = "x3";
  auto bad = parseOptions({}, env);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("NRI_PLUGIN_SOCKET"));
  CHECK(parsed({}, nodeEnv()).nriLaunchedFd == std::nullopt);
}

TEST_CASE("--run-root-dir is bound but read by nothing, so setting it is reported", "[options]") {
  auto o = parsed({"--run-root-dir=/r/"});
  CHECK(o.paths.runRoot == "/r/");
  CHECK(o.ignored == std::vector<std::string>{"run-root-dir"});
  CHECK(parsed({}).ignored.empty());  // its default is never reported
}

TEST_CASE("at start each set flag and enabled gate without effect is one warning", "[options]") {
  SECTION("koordlet's defaults: every gate on by default acts") {
    test::LogCapture cap;
    logStartSettings(parsed({}));
    const std::string log = cap.log.str();
    CHECK(cap.logLines() == 1);
    CHECK(log.find("has no effect") == std::string::npos);
    CHECK(log.find("] feature gates in effect: BECPUSuppress,BatchResource,CPUBurst,"
                   "CPUSetAllocator,GroupIdentity,NodeTopologyReport,RdtResctrl\n") !=
          std::string::npos);
    // Gates left off are not warned about, whether implemented or not.
    CHECK(log.find("CgroupReconcile") == std::string::npos);
    CHECK(log.find("BECPUEvict") == std::string::npos);
  }
  SECTION("Koordinator's manifest: AllAlpha and AllBeta, three runtime-proxy flags") {
    test::LogCapture cap;
    Options o = parsed({"-cgroup-root-dir=/host-cgroup/",
                        "-feature-gates=AllAlpha=true,AllBeta=true", "-runtime-hooks-network=unix",
                        "-runtime-hooks-addr=/x.sock", "--logtostderr=true", "--v=4"});
    logStartSettings(o);
    const std::string log = cap.log.str();
    size_t warnings = 0;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);) warnings += line.rfind('W', 0) == 0;
    CHECK(warnings == 19);  // 39 gates of which 20 are implemented; the proxy's flags act
    CHECK(log.find("flag -runtime-hooks-network has no effect") == std::string::npos);
    CHECK(log.find("feature gate SystemConfig is enabled but has no effect") != std::string::npos);
    CHECK(log.find("feature gate CgroupReconcile is enabled") == std::string::npos);
    CHECK(log.find("feature gate BECPUEvict is enabled") == std::string::npos);
    CHECK(log.find("] feature gates in effect: Accelerators,BECPUEvict,BECPUSuppress,BEMemoryEvict,"
                   "BatchResource,CPUAllocatableEvict,CPUBurst,CPUEvict,CPUNormalization,"
                   "CPUSetAllocator,CgroupReconcile,GPUEnvInject,GroupIdentity,"
                   "MemoryAllocatableEvict,MemoryEvict,NodeTopologyReport,OOMScoreAdj,"
                   "PSICollector,RdtResctrl,ResctrlCollector\n") != std::string::npos);
  }
  SECTION("nothing on and nothing ignored") {
    test::LogCapture cap;
    logStartSettings(parsed({"--feature-gates=AllBeta=false"}));
    CHECK(cap.logLines() == 1);
    CHECK(cap.log.str().find("] feature gates in effect: none\n") != std::string::npos);
  }
}

TEST_CASE("the settings /config shows say per gate whether it is enabled and implemented",
          "[options]") {
  Options o = parsed({"--feature-gates=CgroupReconcile=true,SystemConfig=true",
                      "--run-root-dir=/r/", "--enable-pprof"});
  const nlohmann::json j = settingsJson(o);
  REQUIRE(j.at("featureGates").size() == FeatureGates::known().size());
  CHECK(j.at("featureGates").at("CgroupReconcile") ==
        nlohmann::json({{"enabled", true}, {"implemented", true}}));
  CHECK(j.at("featureGates").at("SystemConfig") ==
        nlohmann::json({{"enabled", true}, {"implemented", false}}));
  CHECK(j.at("featureGates").at("GroupIdentity") ==
        nlohmann::json({{"enabled", true}, {"implemented", true}}));
  CHECK(j.at("featureGates").at("PSICollector") ==
        nlohmann::json({{"enabled", false}, {"implemented", true}}));
  CHECK(j.at("flagsWithoutEffect") == nlohmann::json({"enable-pprof", "run-root-dir"}));
  CHECK(settingsJson(parsed({})).at("flagsWithoutEffect") == nlohmann::json::array());
}

TEST_CASE("--help marks the gates this version does not implement", "[options]") {
  const std::string u = usageText();
  CHECK(u.find("CoreSched=true|false (ALPHA - default=false) not implemented in this "
               "version: no effect\n") != std::string::npos);
  CHECK(u.find("GroupIdentity=true|false (BETA - default=true)\n") != std::string::npos);
  CHECK(u.find("CgroupReconcile=true|false (ALPHA - default=false)\n") != std::string::npos);
}

TEST_CASE("--version names the release and the commit it was built from", "[options]") {
  CHECK(versionLine("0.1.0", "b008e83") == "koordlet-cpp 0.1.0 (git b008e83)");
  CHECK(versionLine("0.1.0", "b008e83-dirty") == "koordlet-cpp 0.1.0 (git b008e83-dirty)");
  // Built outside git, meson's fallback for the commit is the release itself.
  CHECK(versionLine("0.1.0", "0.1.0") == "koordlet-cpp 0.1.0");
  CHECK(versionLine("0.1.0", "") == "koordlet-cpp 0.1.0");
}

TEST_CASE("in host mode a missing service-account token is explained with the flags to set",
          "[options]") {
  Environment env = nodeEnv();
  env.nodeIp.reset();
  env.agentMode = "hostMode";
  const Options host = parsed({}, env);
  CHECK(host.hostMode);
  const std::string advice = hostModeKubeletAdvice(host, /*tokenFileExists=*/false);
  CHECK(advice.find("host mode: kubelet token file "
                    "/var/run/secrets/kubernetes.io/serviceaccount/token does not exist (the "
                    "default is a pod's service-account token; a host has none)") == 0);
  for (const char* flag : {"--kubelet-token-file", "--kubelet-addr", "--kubelet-insecure-tls",
                           "--kubelet-sync-interval=0"}) {
    INFO(flag);
    CHECK(advice.find(flag) != std::string::npos);
  }
  CHECK(advice.find("not at 127.0.0.1") != std::string::npos);
  CHECK(advice.find("read-only port 10255") != std::string::npos);

  // Nothing to say: a token exists, the read-only port or no sync is chosen, or a pod.
  CHECK(hostModeKubeletAdvice(host, true).empty());
  CHECK(hostModeKubeletAdvice(parsed({"--kubelet-insecure-tls"}, env), false).empty());
  CHECK(hostModeKubeletAdvice(parsed({"--kubelet-sync-interval=0"}, env), false).empty());
  const Options pod = parsed({});
  CHECK_FALSE(pod.hostMode);
  CHECK(hostModeKubeletAdvice(pod, false).empty());
  CHECK(hostModeKubeletAdvice(parsed({"--kubelet-addr=10.1.2.3"}, env), false)
            .find("not at 10.1.2.3") != std::string::npos);
}

TEST_CASE("the eviction flags default to koordlet's and set their option", "[options]") {
  const Options d = parsed({});
  CHECK(d.cpuEvictIntervalSeconds == 1);
  CHECK(d.memoryEvictIntervalSeconds == 1);
  CHECK(d.memoryEvictCoolTimeSeconds == 4);
  CHECK(d.cpuEvictCoolTimeSeconds == 20);
  CHECK_FALSE(d.onlyEvictByApi);
  CHECK(d.evictionGracePeriodSeconds == -1);  // the pod's own
  const Options o = parsed({"--cpu-evict-interval-seconds=3", "--memory-evict-interval-seconds=2",
                            "--memory-evict-cool-time-seconds=9", "--cpu-evict-cool-time-seconds=7",
                            "--only-evict-by-api=true", "--eviction-grace-period-seconds=0"});
  CHECK(o.cpuEvictIntervalSeconds == 3);
  CHECK(o.memoryEvictIntervalSeconds == 2);
  CHECK(o.memoryEvictCoolTimeSeconds == 9);
  CHECK(o.cpuEvictCoolTimeSeconds == 7);
  CHECK(o.onlyEvictByApi);
  CHECK(o.evictionGracePeriodSeconds == 0);
  CHECK(o.ignored.empty());  // each of them has an effect now
}

TEST_CASE("the runtime proxy's flags are checked, and host mode serves the host's paths",
          "[options]") {
  Options d = parsed({});
  CHECK(d.enableRuntimeHookServer);
  CHECK(d.runtimeHooksNetwork == "unix");
  CHECK(d.runtimeHooksAddr == "/host-var-run-koordlet/koordlet.sock");
  CHECK(d.runtimeHooksConfigPath == "/host-etc-hookserver/");
  CHECK(d.runtimeHooksFailurePolicy == "Ignore");
  Environment host = nodeEnv();
  host.agentMode = "hostMode";
  Options h = parsed({}, host);
  CHECK(h.runtimeHooksAddr == "/var/run/koordlet/koordlet.sock");
  CHECK(h.runtimeHooksConfigPath == "/etc/runtime/hookserver.d");
  CHECK(h.predictionCheckpointFilepath == "/var/lib/koordlet/prediction-checkpoints");
  Options s = parsed({"--runtime-hooks-disable-stages=PreUpdateContainerResources",
                      "--runtime-hooks-disable-stages=PostStopContainer,PreRunPodSandbox",
                      "--runtime-hooks-failure-policy=Fail", "--runtime-hooks-network=tcp"});
  CHECK(s.runtimeHooksDisableStages == std::vector<std::string>{"PreUpdateContainerResources",
                                                                "PostStopContainer",
                                                                "PreRunPodSandbox"});
  CHECK(s.runtimeHooksFailurePolicy == "Fail");
  CHECK(s.runtimeHooksNetwork == "tcp");
  struct Bad {
    std::string arg, says;
  };
  for (const Bad& b :
       {Bad{"--runtime-hooks-network=udp", "want unix, tcp, tcp4 or tcp6, got \"udp\""},
        Bad{"--runtime-hooks-failure-policy=ignore", "want Ignore or Fail"},
        Bad{"--runtime-hooks-disable-stages=PreCreate",
            "\"PreCreate\" for flag "
            "-runtime-hooks-disable-stages"}}) {
    INFO(b.arg);
    auto r = parseOptions({b.arg}, nodeEnv());
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains(b.says));
  }
}

TEST_CASE(
    "the prediction flags default to koordlet's, set the predictor and refuse what cannot be right",
    "[options]") {
  using namespace std::chrono;
  const Options d = parsed({});
  CHECK(d.predictionCheckpointFilepath == "/prediction-checkpoints");
  CHECK(d.prediction.coldStart == hours(24));
  CHECK(d.prediction.safetyMarginPercent == 10);
  CHECK(d.prediction.memoryHalfLife == hours(24));
  CHECK(d.prediction.cpuHalfLife == hours(12));
  CHECK(d.prediction.trainingInterval == minutes(1));
  CHECK(d.prediction.modelExpiration == minutes(30));
  CHECK(d.prediction.checkpointInterval == minutes(10));
  CHECK(d.prediction.checkpointMaxPerStep == 12);
  const Options o = parsed(
      {"--prediction-checkpoint-filepath=/var/lib/k", "--prediction-cold-start-duration=0s",
       "--prediction-safety-margin-percent=25", "--prediction-memory-histogram-decay-halflife=2h",
       "--prediction-cpu-histogram-decay-halflife=1h", "--prediction-training-interval=5s",
       "--prediction-model-expiration-duration=3m", "--prediction-model-checkpoint-interval=30s",
       "--prediction-model-checkpoint-max-per-step=3"});
  CHECK(o.predictionCheckpointFilepath == "/var/lib/k");
  CHECK(o.prediction.coldStart == seconds(0));
  CHECK(o.prediction.safetyMarginPercent == 25);
  CHECK(o.prediction.memoryHalfLife == hours(2));
  CHECK(o.prediction.cpuHalfLife == hours(1));
  CHECK(o.prediction.trainingInterval == seconds(5));
  CHECK(o.prediction.modelExpiration == minutes(3));
  CHECK(o.prediction.checkpointInterval == seconds(30));
  CHECK(o.prediction.checkpointMaxPerStep == 3);
  CHECK(o.ignored.empty());
  CHECK(errorOf({"--prediction-safety-margin-percent=-10"}).find("must be 0..1000") !=
        std::string::npos);
  CHECK(errorOf({"--prediction-training-interval=0s"}).find("must be > 0") != std::string::npos);
  CHECK(errorOf({"--prediction-cold-start-duration=-1h"}).find("must be >= 0") !=
        std::string::npos);
}

}  // namespace test_agent_options
