// NodeSLO spec (qos/slo_config.h): koordlet's defaults, the merge of a file over
// them, the typed view, and the pod cpuBurst annotation.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "qos/slo_config.h"
#include "tests/qos/slo_test_helpers.h"

namespace test_qos_slo_config {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::slo_test;

TEST_CASE("the defaults are koordlet's built-in NodeSLO spec", "[slo_config]") {
  NodeSloSpec d = defaultNodeSlo();
  CHECK_FALSE(d.threshold.enable);
  CHECK(d.threshold.cpuSuppressThresholdPercent == 65);
  CHECK_FALSE(d.threshold.cpuSuppressMinPercent.has_value());
  CHECK(d.threshold.cpuSuppressPolicy == CpuSuppressPolicy::kCpuset);
  CHECK(d.threshold.memoryEvictThresholdPercent == 70);

  CHECK(d.cpuBurst.policy == CpuBurstPolicy::kNone);
  CHECK(d.cpuBurst.cpuBurstPercent == 1000);
  CHECK(d.cpuBurst.cfsQuotaBurstPercent == 300);
  CHECK(d.cpuBurst.cfsQuotaBurstPeriodSeconds == -1);
  CHECK(d.cpuBurst.sharePoolThresholdPercent == 50);

  for (const ResourceQos* c : {&d.qos.lsr, &d.qos.ls}) {
    CHECK(c->cpu.groupIdentity == 2);
    CHECK(c->cpu.schedIdle == 0);
    CHECK(c->cpu.coreExpeller);
    CHECK(c->memory.wmarkRatio == 95);
    CHECK(c->memory.wmarkScalePermill == 20);
    CHECK(c->memory.wmarkMinAdj == -25);
    CHECK(c->resctrl.catRangeStartPercent == 0);
    CHECK(c->resctrl.catRangeEndPercent == 100);
    CHECK(c->resctrl.mbaPercent == 100);
  }
  CHECK(d.qos.be.cpu.groupIdentity == -1);
  CHECK_FALSE(d.qos.be.cpu.coreExpeller);
  CHECK(d.qos.be.memory.wmarkMinAdj == 50);
  CHECK(d.qos.be.memory.wmarkRatio == 95);
  CHECK(d.qos.be.resctrl.catRangeEndPercent == 30);
  CHECK(d.qos.be.resctrl.mbaPercent == 100);
  CHECK(d.qos.system.cpu.groupIdentity == 0);
  CHECK_FALSE(d.qos.system.cpu.coreExpeller);
  CHECK(d.qos.system.memory.wmarkRatio == 0);
  CHECK(d.qos.system.memory.wmarkScalePermill == 50);
  CHECK(d.qos.system.resctrl.catRangeEndPercent == 100);
  for (const ResourceQos* c : {&d.qos.lsr, &d.qos.ls, &d.qos.be, &d.qos.system}) {
    CHECK_FALSE(c->cpu.enable);
    CHECK_FALSE(c->memory.enable);
    CHECK_FALSE(c->resctrl.enable);
    for (int64_t v :
         {c->memory.minLimitPercent, c->memory.lowLimitPercent, c->memory.throttlingPercent,
          c->memory.priorityEnable, c->memory.priority, c->memory.oomKillGroup}) {
      CHECK(v == 0);
    }
  }
  CHECK(d.source == "defaults");
  CHECK(d.notes.empty());
}

TEST_CASE("the effective spec shows every default under NodeSLO field names", "[slo_config]") {
  const json& e = defaultNodeSlo().effective;
  CHECK(e.at("resourceUsedThresholdWithBE") == json{{"enable", false},
                                                    {"cpuSuppressThresholdPercent", 65},
                                                    {"cpuSuppressPolicy", "cpuset"},
                                                    {"memoryEvictThresholdPercent", 70},
                                                    {"cpuEvictPolicy", "evictByRealLimit"}});
  CHECK(e.at("cpuBurstStrategy") == json{{"policy", "none"},
                                         {"cpuBurstPercent", 1000},
                                         {"cfsQuotaBurstPercent", 300},
                                         {"cfsQuotaBurstPeriodSeconds", -1},
                                         {"sharePoolThresholdPercent", 50}});
  const json& q = e.at("resourceQOSStrategy");
  CHECK(q.at("policies") == json{{"cpuPolicy", "groupIdentity"}, {"netQOSPolicy", "tc"}});
  CHECK(q.at("lsrClass").at("cpuQOS") ==
        json{{"enable", false}, {"groupIdentity", 2}, {"schedIdle", 0}, {"coreExpeller", true}});
  CHECK(q.at("beClass").at("resctrlQOS") == json{{"enable", false},
                                                 {"catRangeStartPercent", 0},
                                                 {"catRangeEndPercent", 30},
                                                 {"mbaPercent", 100}});
  CHECK(q.at("systemClass").at("memoryQOS").at("wmarkScalePermill") == 50);
  CHECK(q.at("lsClass").at("blkioQOS") == json{{"enable", false}});
  CHECK(q.at("lsClass").at("networkQOS").at("ingressLimit") == 0);
  CHECK(q.at("cgroupRoot") == json{{"blkioQOS", {{"enable", false}}}});
  CHECK(e.at("systemStrategy") == json{{"totalNetworkBandwidth", "0"}});
  CHECK(e.at("extensions") == json::object());
}

TEST_CASE("an empty file, a comment-only file or an empty document gives the defaults",
          "[slo_config]") {
  const json defaults = defaultNodeSlo().effective;
  for (const std::string text : {"", "\n", "# nothing yet\n", "---\n", "~\n", "--- # x\n...\n"}) {
    INFO(text);
    NodeSloSpec s = parseOk(text);
    CHECK(s.effective == defaults);
    CHECK(s.source == "defaults");
  }
}

TEST_CASE("a bare spec replaces only the fields it sets and merges objects field by field",
          "[slo_config]") {
  NodeSloSpec s = parseOk(R"(
resourceUsedThresholdWithBE:
  enable: true
  cpuSuppressThresholdPercent: 50
  cpuSuppressMinPercent: 10
  cpuSuppressPolicy: cfsQuota
cpuBurstStrategy:
  policy: cfsQuotaBurstOnly
resourceQOSStrategy:
  beClass:
    resctrlQOS:
      enable: true
      mbaPercent: 50
systemStrategy:
  minFreeKbytesFactor: 100
hostApplications:
  - name: nginx
    qos: LS
)");
  CHECK(s.source == "spec");
  CHECK(s.threshold.enable);
  CHECK(s.threshold.cpuSuppressThresholdPercent == 50);
  CHECK(s.threshold.cpuSuppressMinPercent == 10);
  CHECK(s.threshold.cpuSuppressPolicy == CpuSuppressPolicy::kCfsQuota);
  CHECK(s.threshold.memoryEvictThresholdPercent == 70);  // default kept
  CHECK(s.cpuBurst.policy == CpuBurstPolicy::kCfsQuotaBurstOnly);
  CHECK(s.cpuBurst.burstsQuota());
  CHECK_FALSE(s.cpuBurst.burstsCpu());
  CHECK(s.cpuBurst.cfsQuotaBurstPercent == 300);
  CHECK(s.qos.be.resctrl.enable);
  CHECK(s.qos.be.resctrl.mbaPercent == 50);
  CHECK(s.qos.be.resctrl.catRangeEndPercent == 30);  // the class default, merged
  CHECK(s.qos.be.cpu.groupIdentity == -1);
  CHECK(at(s, "/resourceUsedThresholdWithBE/cpuEvictPolicy") == "evictByRealLimit");
  CHECK(at(s, "/systemStrategy") ==
        json{{"minFreeKbytesFactor", 100}, {"totalNetworkBandwidth", "0"}});
  CHECK(at(s, "/hostApplications") == json::parse(R"([{"name": "nginx", "qos": "LS"}])"));
}

TEST_CASE("a list in the file replaces the list it merges over", "[slo_config]") {
  NodeSloSpec s = parseOk(R"(
resourceQOSStrategy:
  beClass:
    blkioQOS:
      enable: true
      blocks: [{name: /dev/vdb, type: device}]
)");
  CHECK(at(s, "/resourceQOSStrategy/beClass/blkioQOS") ==
        json::parse(R"({"enable": true, "blocks": [{"name": "/dev/vdb", "type": "device"}]})"));
}

TEST_CASE("null or an empty value leaves the default in place", "[slo_config]") {
  NodeSloSpec s = parseOk(R"(
resourceUsedThresholdWithBE:
  cpuSuppressThresholdPercent: ~
  enable: true
cpuBurstStrategy:
extensions: null
)");
  CHECK(s.threshold.enable);
  CHECK(s.threshold.cpuSuppressThresholdPercent == 65);
  CHECK(at(s, "/cpuBurstStrategy/policy") == "none");
  CHECK(at(s, "/extensions") == json::object());
}

TEST_CASE("a disabled block keeps its configured values; resetDisabled gives koordlet's view",
          "[slo_config]") {
  NodeSloSpec s = parseOk(R"(
resourceQOSStrategy:
  lsClass:
    cpuQOS: {enable: false, groupIdentity: 1}
    memoryQOS: {enable: true, minLimitPercent: 40}
  systemClass:
    cpuQOS: {enable: false}
)");
  CHECK(s.qos.ls.cpu.groupIdentity == 1);
  CHECK(at(s, "/resourceQOSStrategy/lsClass/cpuQOS/groupIdentity") == 1);
  ResourceQosStrategy view = resetDisabled(s.qos);
  CHECK(view.ls.cpu.groupIdentity == 0);
  CHECK_FALSE(view.ls.cpu.coreExpeller);
  CHECK(view.ls.memory.minLimitPercent == 40);  // enabled: kept
  CHECK(view.ls.memory.wmarkMinAdj == -25);
  CHECK(view.lsr.memory.wmarkRatio == 0);  // disabled by default: none values
  CHECK(view.lsr.memory.wmarkScalePermill == 50);
  CHECK(view.be.resctrl.catRangeEndPercent == 100);
  CHECK(view.be.resctrl.mbaPercent == 100);
  CHECK(view.system.cpu.groupIdentity == s.qos.system.cpu.groupIdentity);  // SYSTEM kept
  CHECK(view.system.memory.wmarkScalePermill == 50);
  CHECK(noneMemoryQos().wmarkRatio == 0);
  CHECK_FALSE(noneCpuQos().enable);
  CHECK(noneResctrlQos().catRangeEndPercent == 100);
}

TEST_CASE("policies print as koordinator spells them", "[slo_config]") {
  CHECK(std::string(toString(CpuSuppressPolicy::kCpuset)) == "cpuset");
  CHECK(std::string(toString(CpuSuppressPolicy::kCfsQuota)) == "cfsQuota");
  CHECK(std::string(toString(CpuBurstPolicy::kNone)) == "none");
  CHECK(std::string(toString(CpuBurstPolicy::kCpuBurstOnly)) == "cpuBurstOnly");
  CHECK(std::string(toString(CpuBurstPolicy::kCfsQuotaBurstOnly)) == "cfsQuotaBurstOnly");
  CHECK(std::string(toString(CpuBurstPolicy::kAuto)) == "auto");
}

TEST_CASE("the docs' pod cpuBurst annotation merges over the node's config", "[slo_config]") {
  YAML::Node pod =
      YAML::LoadFile(test::fixturePath("koordinator/docs/pod-cpu-burst-annotation.yaml"));
  std::string annotation =
      pod["metadata"]["annotations"]["koordinator.sh/cpuBurst"].as<std::string>();
  CpuBurstConfig node;
  node.cpuBurstPercent = 500;
  node.sharePoolThresholdPercent = 40;
  auto merged = mergeCpuBurstAnnotation(node, annotation);
  REQUIRE(merged.ok());
  CHECK(merged->policy == CpuBurstPolicy::kAuto);
  CHECK(merged->cpuBurstPercent == 500);
  CHECK(merged->sharePoolThresholdPercent == 40);
}

TEST_CASE("pod annotation fields win over the node's, null and absent ones do not",
          "[slo_config]") {
  CpuBurstConfig node;
  node.policy = CpuBurstPolicy::kAuto;
  auto merged = mergeCpuBurstAnnotation(
      node, R"({"policy": "none", "cfsQuotaBurstPercent": 150, "cpuBurstPercent": null,
                "cfsQuotaBurstPeriodSeconds": 0})");
  REQUIRE(merged.ok());
  CHECK(merged->policy == CpuBurstPolicy::kNone);
  CHECK(merged->cfsQuotaBurstPercent == 150);
  CHECK(merged->cpuBurstPercent == 1000);
  CHECK(merged->cfsQuotaBurstPeriodSeconds == 0);
  auto empty = mergeCpuBurstAnnotation(node, "{}");
  REQUIRE(empty.ok());
  CHECK(empty->policy == CpuBurstPolicy::kAuto);
}

TEST_CASE("a bad pod annotation is an error naming the annotation and field", "[slo_config]") {
  CpuBurstConfig node;
  auto err = [&](const std::string& text) {
    auto r = mergeCpuBurstAnnotation(node, text);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(err(R"({"cpuBurstPercent": "x"})") ==
        "annotation koordinator.sh/cpuBurst: cpuBurstPercent: expected an integer, got string "
        "\"x\"");
  CHECK(err(R"({"policy": "sometimes"})") ==
        "annotation koordinator.sh/cpuBurst: policy: unknown policy \"sometimes\"; expected "
        "none, cpuBurstOnly, cfsQuotaBurstOnly or auto");
  CHECK(err(R"({"cfsQuotaBurstPercent": 50})") ==
        "annotation koordinator.sh/cpuBurst: cfsQuotaBurstPercent: 50 is below the minimum 100");
  CHECK(err(R"({"sharePoolThresholdPercent": 50})") ==
        "annotation koordinator.sh/cpuBurst: sharePoolThresholdPercent: unknown field; expected "
        "policy, cpuBurstPercent, cfsQuotaBurstPercent or cfsQuotaBurstPeriodSeconds");
  CHECK(err(R"({"policy": "auto",})") ==
        "annotation koordinator.sh/cpuBurst: invalid JSON at column 19: syntax error while "
        "parsing object key - unexpected '}'; expected string literal");
  CHECK(err("auto") ==
        "annotation koordinator.sh/cpuBurst: invalid JSON at column 1: syntax error while parsing "
        "value - invalid literal; last read: 'a'");
  CHECK(err(R"(["auto"])") ==
        "annotation koordinator.sh/cpuBurst: expected a JSON object, got a list");
}

}  // namespace test_qos_slo_config
