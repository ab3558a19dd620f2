// The file forms (qos/slo_source.h): a bare spec, a NodeSLO object, the
// slo-controller-config ConfigMap, from the docs' and the chart's fixtures.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "qos/slo_config.h"
#include "tests/qos/slo_test_helpers.h"

namespace test_qos_slo_source {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::slo_test;

TEST_CASE("a file that is not one mapping is rejected", "[slo_config]") {
  CHECK(parseError("- a\n- b\n") ==
        "slo.yaml: expected a mapping (a spec, a NodeSLO or a ConfigMap), got a list");
  CHECK(contains(parseError("42\n"), "got integer 42"));
  CHECK(contains(parseError("just words\n"), "got string \"just words\""));
  CHECK(parseError("a: 1\n---\nb: 2\n") ==
        "slo.yaml: 2 YAML documents; expected one (a spec, a NodeSLO or a ConfigMap)");
  CHECK(contains(parseError("kind: Pod\nspec: {}\n"),
                 "slo.yaml: kind: \"Pod\" is not NodeSLO or ConfigMap"));
}

TEST_CASE("a NodeSLO object's spec is used: the docs' example", "[slo_config]") {
  NodeSloSpec s = parseOk(fixture("koordinator/docs/nodeslo-example.yaml"), "nodeslo.yaml");
  CHECK(s.source == "NodeSLO test-node");
  CHECK(s.threshold.enable);
  CHECK(s.threshold.cpuSuppressThresholdPercent == 65);
  CHECK(s.threshold.cpuSuppressPolicy == CpuSuppressPolicy::kCpuset);
  CHECK(s.threshold.memoryEvictThresholdPercent == 70);
  // The empty blocks merge nothing: the full defaults show.
  CHECK(at(s, "/cpuBurstStrategy") == defaultNodeSlo().effective.at("cpuBurstStrategy"));
  CHECK(at(s, "/resourceQOSStrategy") == defaultNodeSlo().effective.at("resourceQOSStrategy"));
  CHECK(s.notes.empty());
}

TEST_CASE("a NodeSLO as kubectl get prints it is read", "[slo_config]") {
  NodeSloSpec s = parseOk(fixture("koordinator/docs/nodeslo-kubectl-get.yaml"));
  CHECK(s.threshold.enable);
  CHECK(s.threshold.cpuSuppressThresholdPercent == 60);
  CHECK(s.threshold.memoryEvictThresholdPercent == 60);
  CHECK(parseError("kind: NodeSLO\nspec: [1]\n") ==
        "slo.yaml: spec: expected an object, got a list");
  CHECK(parseOk("kind: NodeSLO\nmetadata: {name: n1}\n").source == "NodeSLO n1");
}

TEST_CASE("the repo's slo-controller-config ConfigMap enables the threshold strategy",
          "[slo_config]") {
  NodeSloSpec s = parseOk(fixture("koordinator/repo/slo-controller-config.yaml"));
  CHECK(s.source == "ConfigMap system/slo-controller-config");
  CHECK(s.threshold.enable);
  CHECK(s.threshold.cpuSuppressThresholdPercent == 65);
  REQUIRE(s.notes.size() == 1);
  CHECK(s.notes[0] == "data.colocation-config: read by koord-manager only, not by the node agent");
}

TEST_CASE("the docs' per-feature ConfigMaps each set their feature", "[slo_config]") {
  SECTION("cpu burst") {
    NodeSloSpec s = parseOk(fixture("koordinator/docs/slo-controller-config-cpu-burst.yaml"));
    CHECK(s.source == "ConfigMap koordinator-system/slo-controller-config");
    CHECK(s.cpuBurst.policy == CpuBurstPolicy::kAuto);
    CHECK(s.cpuBurst.cpuBurstPercent == 1000);
    CHECK(s.cpuBurst.sharePoolThresholdPercent == 50);
    CHECK_FALSE(s.threshold.enable);
  }
  SECTION("cpu suppress") {
    NodeSloSpec s = parseOk(fixture("koordinator/docs/slo-controller-config-cpu-suppress.yaml"));
    CHECK(s.threshold.enable);
    CHECK(s.threshold.cpuSuppressPolicy == CpuSuppressPolicy::kCpuset);
  }
  SECTION("memory qos") {
    NodeSloSpec s = parseOk(fixture("koordinator/docs/slo-controller-config-memory-qos.yaml"));
    CHECK(s.qos.ls.memory.enable);
    CHECK(s.qos.ls.memory.wmarkMinAdj == -25);
    CHECK(s.qos.be.memory.enable);
    CHECK(s.qos.be.memory.wmarkMinAdj == 50);
    CHECK_FALSE(s.qos.lsr.memory.enable);
  }
  SECTION("cpu evict, whose docs spell a field in Go's capitals") {
    NodeSloSpec s = parseOk(fixture("koordinator/docs/slo-controller-config-cpu-evict.yaml"));
    const json& t = at(s, "/resourceUsedThresholdWithBE");
    CHECK(t.at("cpuEvictTimeWindowSeconds") == 60);
    CHECK(t.at("cpuEvictBESatisfactionLowerPercent") == 60);
    CHECK(t.at("cpuEvictBESatisfactionUpperPercent") == 80);
    CHECK(t.at("cpuEvictBEUsageThresholdPercent") == 90);
  }
  SECTION("memory evict") {
    NodeSloSpec s = parseOk(fixture("koordinator/docs/slo-controller-config-memory-evict.yaml"));
    CHECK(s.threshold.enable);
    CHECK(s.threshold.memoryEvictThresholdPercent == 70);
  }
  SECTION("cpu qos by group identity") {
    NodeSloSpec s =
        parseOk(fixture("koordinator/docs/slo-controller-config-cpu-qos-group-identity.yaml"));
    CHECK(s.qos.ls.cpu.enable);
    CHECK(s.qos.ls.cpu.groupIdentity == 2);
    CHECK(s.qos.be.cpu.enable);
    CHECK(s.qos.be.cpu.groupIdentity == -1);
  }
  SECTION("cpu qos by core scheduling") {
    NodeSloSpec s =
        parseOk(fixture("koordinator/docs/slo-controller-config-cpu-qos-core-sched.yaml"));
    CHECK(at(s, "/resourceQOSStrategy/policies/cpuPolicy") == "coreSched");
    CHECK(s.qos.be.cpu.schedIdle == 1);
    CHECK_FALSE(s.qos.be.cpu.coreExpeller);
    CHECK(s.qos.ls.cpu.coreExpeller);
  }
  SECTION("host applications, listed at the top of their key") {
    NodeSloSpec s =
        parseOk(fixture("koordinator/docs/slo-controller-config-host-application.yaml"));
    CHECK(at(s, "/hostApplications") == json::parse(R"([{"name": "nginx", "qos": "LS",
        "cgroupPath": {"base": "CgroupRoot", "parentDir": "host-latency-sensitive/",
                       "relativePath": "nginx/"}}])"));
    CHECK(s.qos.ls.cpu.enable);
  }
  SECTION("as kubectl get prints it") {
    NodeSloSpec s = parseOk(fixture("koordinator/docs/slo-controller-config-kubectl-get.yaml"));
    CHECK_FALSE(s.threshold.enable);
    CHECK(anyNoteContains(s, "data.colocation-config"));
  }
  SECTION("a data-only patch snippet without kind") {
    NodeSloSpec s = parseOk(fixture("koordinator/docs/slo-controller-config-threshold-patch.yaml"));
    CHECK(s.source == "ConfigMap");
    CHECK(s.threshold.enable);
    CHECK(s.threshold.cpuSuppressThresholdPercent == 60);
    CHECK(s.threshold.memoryEvictThresholdPercent == 60);
  }
  SECTION("colocation only: nothing for the node agent") {
    NodeSloSpec s = parseOk(fixture("koordinator/docs/slo-controller-config-mid-colocation.yaml"));
    CHECK(s.effective == defaultNodeSlo().effective);
    CHECK(anyNoteContains(s, "data.colocation-config: read by koord-manager only"));
  }
}

TEST_CASE("the docs' full ConfigMap template has a JSON error the message points at",
          "[slo_config]") {
  const std::string text = fixture("koordinator/docs/slo-controller-config-full-template.yaml");
  // system-config misses the comma after clusterStrategy (fixture line 245); the
  // parser notices at the next member, "nodeStrategies" on line 246.
  CHECK(parseError(text, "template.yaml") ==
        "template.yaml:246:22: data.system-config: invalid JSON: syntax error while parsing "
        "object - unexpected string literal; expected '}'");

  std::string fixed = text;
  const std::string missing = "\"memcgReapBackGround\": 0\n      }\n";
  auto pos = fixed.find(missing);
  REQUIRE(pos != std::string::npos);
  fixed.replace(pos, missing.size(), "\"memcgReapBackGround\": 0\n      },\n");
  NodeSloSpec s = parseOk(fixed, "template.yaml");
  CHECK_FALSE(s.threshold.enable);
  CHECK(at(s, "/resourceUsedThresholdWithBE/memoryEvictLowerPercent") == 65);
  CHECK(at(s, "/resourceUsedThresholdWithBE/cpuEvictBEUsageThresholdPercent") == 90);
  CHECK(s.qos.be.memory.wmarkRatio == 95);  // the anolis nodeStrategy's 90 is not applied
  CHECK(s.cpuBurst.policy == CpuBurstPolicy::kNone);
  CHECK(at(s, "/systemStrategy") == json{{"minFreeKbytesFactor", 100},
                                         {"watermarkScaleFactor", 150},
                                         {"memcgReapBackGround", 0},
                                         {"totalNetworkBandwidth", "0"}});
  CHECK(at(s, "/hostApplications/0/name") == "nginx");
  CHECK(s.notes.size() == 5);
  for (const std::string key :
       {"resource-threshold-config", "resource-qos-config", "cpu-burst-config", "system-config"}) {
    INFO(key);
    CHECK(anyNoteContains(s, "data." + key + ": 1 nodeStrategies entries not applied"));
  }
  CHECK(anyNoteContains(s, "data.colocation-config: read by koord-manager only"));
}

TEST_CASE("the helm chart's ConfigMap loads once its template is rendered", "[slo_config]") {
  const std::string text = fixture("koordinator/charts/v1.8.0-slo-controller-config.yaml.tmpl");
  CHECK(parseError(text, "chart.yaml") ==
        "chart.yaml:5:15: a mapping key must be a plain value (an unrendered template?)");
  std::string rendered = text;
  const std::string placeholder = "{{ .Values.installation.namespace }}";
  auto pos = rendered.find(placeholder);
  REQUIRE(pos != std::string::npos);
  rendered.replace(pos, placeholder.size(), "koordinator-system");
  NodeSloSpec s = parseOk(rendered, "chart.yaml");
  CHECK(s.source == "ConfigMap koordinator-system/slo-controller-config");
  CHECK(s.threshold.enable);
}

TEST_CASE("ConfigMap nodeStrategies are not applied and the notes say so", "[slo_config]") {
  NodeSloSpec s = parseOk(R"(
kind: ConfigMap
metadata: {name: slo-controller-config, namespace: koordinator-system}
data:
  cpu-burst-config: |
    {"clusterStrategy": {"policy": "cpuBurstOnly"},
     "nodeStrategies": [{"name": "a", "policy": "auto"}, {"name": "b", "policy": "none"}]}
  host-application-config: '{"applications": [], "nodeConfigs": [{"name": "x"}]}'
  some-other-config: '{}'
)");
  CHECK(s.cpuBurst.policy == CpuBurstPolicy::kCpuBurstOnly);
  CHECK(s.notes == std::vector<std::string>{
                       "data.cpu-burst-config: 2 nodeStrategies entries not applied (choosing one "
                       "needs the node's labels, which this agent does not read); "
                       "clusterStrategy is used",
                       "data.host-application-config: 1 nodeConfigs entries not applied (choosing "
                       "one needs the node's labels, which this agent does not read); "
                       "applications is used",
                       "data.some-other-config: not a NodeSLO source, ignored"});
}

TEST_CASE("ConfigMap errors name the data key and where in it", "[slo_config]") {
  const std::string head =
      "kind: ConfigMap\n"
      "metadata: {name: slo-controller-config}\n"
      "data:\n";
  SECTION("a field error names the key and the clusterStrategy path") {
    CHECK(parseError(head + "  resource-threshold-config: |\n"
                            "    {\"clusterStrategy\": {\"cpuSuppressThresholdPercent\": 150}}\n",
                     "cm.yaml") ==
          "cm.yaml: data.resource-threshold-config: clusterStrategy.cpuSuppressThresholdPercent: "
          "150 is out of range 0..100");
    CHECK(contains(parseError(head + "  resource-qos-config: '{\"clusterStrategy\": {\"beClass\": "
                                     "{\"resctrlQOS\": {\"catRangeStartPercent\": 40}}}}'\n"),
                   "slo.yaml: data.resource-qos-config: clusterStrategy.beClass.resctrlQOS: "
                   "catRangeStartPercent 40 must be below catRangeEndPercent 30"));
  }
  SECTION("a misspelt wrapper field is caught") {
    CHECK(parseError(head + "  cpu-burst-config: '{\"clusterStrategies\": {}}'\n") ==
          "slo.yaml: data.cpu-burst-config: clusterStrategies: unknown field; did you mean "
          "clusterStrategy?");
  }
  SECTION("a JSON error in a literal block points at the file line and column") {
    CHECK(parseError(head + "  resource-threshold-config: |\n"
                            "    {\n"
                            "      \"clusterStrategy\": {\"enable\": tru}\n"
                            "    }\n",
                     "cm.yaml") ==
          "cm.yaml:6:40: data.resource-threshold-config: invalid JSON: syntax error while parsing "
          "value - invalid literal; last read: '\"enable\": tru}'");
  }
  SECTION("a JSON error in a one-line quoted value too") {
    CHECK_THAT(parseError(head + "  cpu-burst-config: '{\"clusterStrategy\" {}}'\n"),
               Catch::StartsWith("slo.yaml:4:41: data.cpu-burst-config: invalid JSON: "));
  }
  SECTION("a value that is not a string or not an object") {
    CHECK(parseError(head + "  cpu-burst-config: {clusterStrategy: {}}\n") ==
          "slo.yaml: data.cpu-burst-config: expected a string holding JSON, got an object");
    CHECK(parseError(head + "  cpu-burst-config: '[1]'\n") ==
          "slo.yaml: data.cpu-burst-config: expected a JSON object, got a list");
    CHECK(contains(parseError(head + "  cpu-burst-config: ''\n"),
                   "data.cpu-burst-config: invalid JSON"));
    CHECK(parseError("kind: ConfigMap\ndata: [1]\n") ==
          "slo.yaml: data: expected an object, got a list");
  }
}

}  // namespace test_qos_slo_source
