#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "qos/slo_config.h"
#include "tests/support/temp_tree.h"

using namespace koord;
using json = nlohmann::json;

namespace {

std::string fixture(const std::string& rel) {
  std::ifstream in(test::fixturePath(rel), std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

NodeSloSpec parseOk(const std::string& text, const std::string& file = "slo.yaml") {
  auto r = parseNodeSlo(text, file);
  if (!r.ok()) FAIL(r.error().message);
  return *r;
}

std::string parseError(const std::string& text, const std::string& file = "slo.yaml") {
  auto r = parseNodeSlo(text, file);
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool anyNoteContains(const NodeSloSpec& s, const std::string& needle) {
  return std::any_of(s.notes.begin(), s.notes.end(),
                     [&](const std::string& n) { return contains(n, needle); });
}

const json& at(const NodeSloSpec& s, const std::string& pointer) {
  return s.effective.at(json::json_pointer(pointer));
}

}  // namespace

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

TEST_CASE("plain 65 is an integer but a quoted \"65\" is a string an integer field refuses",
          "[slo_config]") {
  CHECK(parseOk("resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: 65}")
            .threshold.cpuSuppressThresholdPercent == 65);
  CHECK(parseError("resourceUsedThresholdWithBE:\n  cpuSuppressThresholdPercent: \"65\"\n") ==
        "slo.yaml: spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: "
        "expected an integer, got string \"65\"");
  CHECK(contains(parseError("resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: '65'}"),
                 "expected an integer, got string \"65\""));
  CHECK(contains(parseError("resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: !!str 65}"),
                 "expected an integer, got string \"65\""));
  CHECK(contains(parseError("resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: 65.0}"),
                 "expected an integer, got number 65.0"));
  CHECK(contains(parseError("cpuBurstStrategy: {sharePoolThresholdPercent: 1.5}"),
                 "spec.cpuBurstStrategy.sharePoolThresholdPercent: expected an integer, got "
                 "number 1.5"));
  // Strings stay strings where a string is wanted, numbers in untyped blocks stay numbers.
  NodeSloSpec s =
      parseOk("systemStrategy: {totalNetworkBandwidth: \"1000\", watermarkScaleFactor: 150}");
  CHECK(at(s, "/systemStrategy/totalNetworkBandwidth") == "1000");
  CHECK(at(s, "/systemStrategy/watermarkScaleFactor").is_number_integer());
}

TEST_CASE("only true and false are booleans", "[slo_config]") {
  CHECK(parseOk("resourceUsedThresholdWithBE: {enable: true}").threshold.enable);
  CHECK(parseOk("resourceUsedThresholdWithBE: {enable: True}").threshold.enable);
  CHECK_FALSE(parseOk("resourceUsedThresholdWithBE: {enable: FALSE}").threshold.enable);
  CHECK(parseError("resourceUsedThresholdWithBE: {enable: yes}") ==
        "slo.yaml: spec.resourceUsedThresholdWithBE.enable: expected a boolean, got string "
        "\"yes\"");
  CHECK(contains(parseError("resourceUsedThresholdWithBE: {enable: \"true\"}"),
                 "expected a boolean, got string \"true\""));
  CHECK(contains(parseError("resourceUsedThresholdWithBE: {enable: 1}"),
                 "expected a boolean, got integer 1"));
}

TEST_CASE("a percent out of range is rejected naming the range", "[slo_config]") {
  CHECK(parseError("resourceUsedThresholdWithBE:\n  cpuSuppressThresholdPercent: 150\n",
                   "/etc/koordlet/slo.yaml") ==
        "/etc/koordlet/slo.yaml: spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: "
        "150 is out of range 0..100");
  CHECK(contains(parseError("resourceUsedThresholdWithBE: {memoryEvictThresholdPercent: -1}"),
                 "-1 is out of range 0..100"));
}

TEST_CASE("each typed field has its own range", "[slo_config]") {
  struct Case {
    std::string yaml;
    std::string error;  // "" = accepted
  };
  const std::vector<Case> cases = {
      {"cpuBurstStrategy: {cfsQuotaBurstPercent: 99}",
       "spec.cpuBurstStrategy.cfsQuotaBurstPercent: 99 is below the minimum 100"},
      {"cpuBurstStrategy: {cfsQuotaBurstPercent: 100}", ""},
      {"cpuBurstStrategy: {cfsQuotaBurstPeriodSeconds: -2}",
       "spec.cpuBurstStrategy.cfsQuotaBurstPeriodSeconds: -2 is below the minimum -1"},
      {"cpuBurstStrategy: {cfsQuotaBurstPeriodSeconds: -1}", ""},
      {"cpuBurstStrategy: {cfsQuotaBurstPeriodSeconds: 0}", ""},
      {"cpuBurstStrategy: {cpuBurstPercent: 10001}", "10001 is out of range 0..10000"},
      {"cpuBurstStrategy: {sharePoolThresholdPercent: 101}", "101 is out of range 0..100"},
      {"resourceQOSStrategy: {lsClass: {resctrlQOS: {mbaPercent: 0}}}",
       "spec.resourceQOSStrategy.lsClass.resctrlQOS.mbaPercent: 0 is out of range 1..100"},
      {"resourceQOSStrategy: {lsClass: {resctrlQOS: {mbaPercent: 1}}}", ""},
      {"resourceQOSStrategy: {lsrClass: {cpuQOS: {groupIdentity: 3}}}",
       "spec.resourceQOSStrategy.lsrClass.cpuQOS.groupIdentity: 3 is out of range -1..2"},
      {"resourceQOSStrategy: {lsrClass: {cpuQOS: {groupIdentity: -2}}}",
       "-2 is out of range -1..2"},
      {"resourceQOSStrategy: {beClass: {cpuQOS: {groupIdentity: -1, schedIdle: 1}}}", ""},
      {"resourceQOSStrategy: {beClass: {cpuQOS: {schedIdle: 2}}}", "2 is out of range 0..1"},
      {"resourceQOSStrategy: {beClass: {memoryQOS: {wmarkMinAdj: -26}}}",
       "-26 is out of range -25..50"},
      {"resourceQOSStrategy: {beClass: {memoryQOS: {wmarkScalePermill: 0}}}",
       "0 is out of range 1..1000"},
      {"resourceQOSStrategy: {beClass: {memoryQOS: {priority: 13}}}", "13 is out of range 0..12"},
      {"resourceQOSStrategy: {beClass: {memoryQOS: {pageCacheLimitSize: -1}}}",
       "-1 is below the minimum 0"},
      {"resourceQOSStrategy: {systemClass: {memoryQOS: {throttlingPercent: 101}}}",
       "spec.resourceQOSStrategy.systemClass.memoryQOS.throttlingPercent: 101 is out of range"},
      {"resourceUsedThresholdWithBE: {cpuEvictBEUsageThresholdPercent: 101}",
       "spec.resourceUsedThresholdWithBE.cpuEvictBEUsageThresholdPercent: 101 is out of range "
       "0..100"},
      {"resourceUsedThresholdWithBE: {cpuEvictTimeWindowSeconds: 0}",
       "cpuEvictTimeWindowSeconds: 0 is below the minimum 1"},
      {"resourceUsedThresholdWithBE: {memoryAllocatableEvictThresholdPercent: 110}", ""},
      {"resourceUsedThresholdWithBE: {allocatableEvictPriorityThreshold: 8000}",
       "8000 is out of range 0..7999"},
      {"resourceUsedThresholdWithBE: {memoryEvictLowerPercent: \"60\"}",
       "memoryEvictLowerPercent: expected an integer, got string \"60\""},
      {"resourceUsedThresholdWithBE: {cpuEvictPolicy: evictByUsage}",
       "unknown cpuEvictPolicy \"evictByUsage\"; expected evictByRealLimit or evictByAllocatable"},
      {"resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: 99999999999999999999}",
       "slo.yaml:1:60: integer 99999999999999999999 is out of range"},
      {"resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: 0x40}", ""},
  };
  for (const auto& c : cases) {
    INFO(c.yaml);
    auto r = parseNodeSlo(c.yaml, "slo.yaml");
    if (c.error.empty()) {
      CHECK(r.ok());
    } else {
      REQUIRE_FALSE(r.ok());
      CHECK_THAT(r.error().message, Catch::Contains(c.error));
    }
  }
}

TEST_CASE("an unknown policy is rejected naming the accepted ones", "[slo_config]") {
  CHECK(parseError("resourceUsedThresholdWithBE: {cpuSuppressPolicy: foo}") ==
        "slo.yaml: spec.resourceUsedThresholdWithBE.cpuSuppressPolicy: unknown cpuSuppressPolicy "
        "\"foo\"; expected cpuset or cfsQuota");
  CHECK(parseError("cpuBurstStrategy: {policy: always}") ==
        "slo.yaml: spec.cpuBurstStrategy.policy: unknown policy \"always\"; expected none, "
        "cpuBurstOnly, cfsQuotaBurstOnly or auto");
  CHECK(contains(parseError("cpuBurstStrategy: {policy: Auto}"), "unknown policy \"Auto\""));
}

TEST_CASE("a misspelt field in a typed block is rejected with a suggestion", "[slo_config]") {
  CHECK(parseError("resourceUsedThresholdWithBE:\n  cpuSupressThresholdPercent: 50\n") ==
        "slo.yaml: spec.resourceUsedThresholdWithBE.cpuSupressThresholdPercent: unknown field; "
        "did you mean cpuSuppressThresholdPercent?");
  CHECK(contains(parseError("cpuBurstStrategy: {cfsQuotaBurstPercents: 200}"),
                 "spec.cpuBurstStrategy.cfsQuotaBurstPercents: unknown field; did you mean "
                 "cfsQuotaBurstPercent?"));
  CHECK(contains(parseError("resourceQOSStrategy: {lsClass: {memoryQOS: {wmarkRatios: 90}}}"),
                 "spec.resourceQOSStrategy.lsClass.memoryQOS.wmarkRatios: unknown field; did "
                 "you mean wmarkRatio?"));
  CHECK(contains(parseError("resourceQOSStrategy: {beClass: {cpuQOS: {groupIdentify: 1}}}"),
                 "did you mean groupIdentity?"));
  CHECK(contains(parseError("resourceQOSStrategy: {beClass: {resctrlQOS: {mba: 50}}}"),
                 "spec.resourceQOSStrategy.beClass.resctrlQOS.mba: unknown field; expected "
                 "enable, catRangeStartPercent, catRangeEndPercent or mbaPercent"));
  CHECK(contains(parseError("resourceQOSStrategy: {lsClas: {}}"),
                 "spec.resourceQOSStrategy.lsClas: unknown field; did you mean lsClass?"));
  CHECK(contains(parseError("resourceQOSStrategy: {beClass: {cpuQoS2: {}}}"),
                 "spec.resourceQOSStrategy.beClass.cpuQoS2: unknown field"));
}

TEST_CASE("unknown top-level fields and the untyped blocks are kept as they are", "[slo_config]") {
  NodeSloSpec s = parseOk(R"(
futureStrategy: {knob: 3}
systemStrategy: {schedFeatures: {ID_ABSOLUTE_EXPEL: true}, newKnob: 1}
extensions: {vendor: {anything: [1, 2]}}
resourceQOSStrategy:
  policies: {cpuPolicy: coreSched, futurePolicy: x}
  lsClass:
    networkQOS: {enable: true, ingressLimit: 50M}
)");
  CHECK(at(s, "/futureStrategy") == json{{"knob", 3}});
  CHECK(s.notes ==
        std::vector<std::string>{"spec.futureStrategy: not a field this agent knows, kept as-is"});
  CHECK(parseOk("cpuBurstStrategys: {policy: auto}").notes ==
        std::vector<std::string>{"spec.cpuBurstStrategys: not a field this agent knows, kept "
                                 "as-is; did you mean cpuBurstStrategy?"});
  CHECK(at(s, "/systemStrategy/newKnob") == 1);
  CHECK(at(s, "/systemStrategy/schedFeatures/ID_ABSOLUTE_EXPEL") == true);
  CHECK(at(s, "/extensions/vendor/anything") == json{1, 2});
  CHECK(at(s, "/resourceQOSStrategy/policies") ==
        json{{"cpuPolicy", "coreSched"}, {"futurePolicy", "x"}, {"netQOSPolicy", "tc"}});
  CHECK(at(s, "/resourceQOSStrategy/lsClass/networkQOS/ingressLimit") == "50M");
  CHECK(at(s, "/resourceQOSStrategy/lsClass/networkQOS/egressLimit") == 0);
  // ...but they must still have the right shape.
  CHECK(parseError("systemStrategy: 5") ==
        "slo.yaml: spec.systemStrategy: expected an object, got integer 5");
  CHECK(contains(parseError("hostApplications: {name: x}"),
                 "spec.hostApplications: expected a list, got an object"));
  CHECK(contains(parseError("resourceQOSStrategy: {beClass: {blkioQOS: [1]}}"),
                 "spec.resourceQOSStrategy.beClass.blkioQOS: expected an object, got a list"));
  CHECK(contains(parseError("resourceQOSStrategy: [1]"),
                 "spec.resourceQOSStrategy: expected an object, got a list"));
}

TEST_CASE("field names also match case-insensitively, as koord-manager's Go decoder does",
          "[slo_config]") {
  NodeSloSpec s = parseOk(R"(
ResourceUsedThresholdWithBE:
  Enable: true
  CPUEvictTimeWindowSeconds: 60
resourceQOSStrategy: {LSClass: {CPUQOS: {GroupIdentity: 1}}}
)");
  CHECK(s.threshold.enable);
  CHECK(at(s, "/resourceUsedThresholdWithBE/cpuEvictTimeWindowSeconds") == 60);
  CHECK_FALSE(at(s, "/resourceUsedThresholdWithBE").contains("CPUEvictTimeWindowSeconds"));
  CHECK(s.qos.ls.cpu.groupIdentity == 1);
  CHECK(contains(parseError("cpuBurstStrategy: {policy: auto, Policy: none}"),
                 "spec.cpuBurstStrategy.Policy: set twice, also as policy"));
}

TEST_CASE("all problems of a file are reported, one line each naming file and field",
          "[slo_config]") {
  std::string e = parseError(R"(
resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: 150, enable: "yes"}
cpuBurstStrategy: {policy: sometimes}
)");
  CHECK(e ==
        "slo.yaml: spec.cpuBurstStrategy.policy: unknown policy \"sometimes\"; expected none, "
        "cpuBurstOnly, cfsQuotaBurstOnly or auto\n"
        "slo.yaml: spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: 150 is out of "
        "range 0..100\n"
        "slo.yaml: spec.resourceUsedThresholdWithBE.enable: expected a boolean, got string "
        "\"yes\"");
  std::string text = "cpuBurstStrategy:\n";
  for (int i = 0; i < 30; ++i) text += "  x" + std::to_string(i) + ": 1\n";
  std::string capped = parseError(text);
  CHECK(std::count(capped.begin(), capped.end(), '\n') == 20);
  CHECK(contains(capped, "slo.yaml: more problems not shown"));
}

TEST_CASE("the resctrl range must not be empty, after merging the class defaults", "[slo_config]") {
  CHECK(parseError("resourceQOSStrategy: {beClass: {resctrlQOS: {catRangeStartPercent: 30}}}") ==
        "slo.yaml: spec.resourceQOSStrategy.beClass.resctrlQOS: catRangeStartPercent 30 must be "
        "below catRangeEndPercent 30 (an empty range is an empty cache mask)");
  CHECK(parseOk("resourceQOSStrategy: {lsClass: {resctrlQOS: {catRangeStartPercent: 30}}}")
            .qos.ls.resctrl.catRangeStartPercent == 30);
  CHECK(contains(parseError("resourceQOSStrategy: {lsClass: {resctrlQOS: "
                            "{catRangeStartPercent: 60, catRangeEndPercent: 40}}}"),
                 "catRangeStartPercent 60 must be below catRangeEndPercent 40"));
}

TEST_CASE("an eviction lower percent must be below its threshold, defaults included",
          "[slo_config]") {
  CHECK(parseError("resourceUsedThresholdWithBE: {memoryEvictLowerPercent: 72}") ==
        "slo.yaml: spec.resourceUsedThresholdWithBE: memoryEvictLowerPercent 72 must be below "
        "memoryEvictThresholdPercent 70");
  CHECK(parseOk("resourceUsedThresholdWithBE: {memoryEvictLowerPercent: 72, "
                "memoryEvictThresholdPercent: 80}")
            .threshold.memoryEvictThresholdPercent == 80);
  CHECK(contains(parseError("resourceUsedThresholdWithBE: {cpuEvictBESatisfactionLowerPercent: "
                            "80, cpuEvictBESatisfactionUpperPercent: 60}"),
                 "cpuEvictBESatisfactionLowerPercent 80 must be below "
                 "cpuEvictBESatisfactionUpperPercent 60"));
}

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

TEST_CASE("YAML and JSON syntax errors carry the file, line and column", "[slo_config]") {
  CHECK(parseError("resourceUsedThresholdWithBE: [1,\nenable: 2\n") ==
        "slo.yaml:3:1: invalid YAML: end of sequence flow not found");
  std::string json = "{\n  \"resourceUsedThresholdWithBE\": {\n    \"enable\": true,,\n  }\n}\n";
  CHECK_THAT(parseError(json, "slo.json"), Catch::StartsWith("slo.json:3:"));
  CHECK(contains(parseError("a:\n  b: 1\n b: 2\n"), "slo.yaml:3:"));
}

TEST_CASE("a JSON file is read like YAML, tabs and all", "[slo_config]") {
  NodeSloSpec s = parseOk(
      "{\n\t\"resourceUsedThresholdWithBE\": {\n\t\t\"enable\": true,\n\t\t"
      "\"cpuSuppressThresholdPercent\": 40\n\t},\n\t\"cpuBurstStrategy\": {\"policy\": "
      "\"auto\"}\n}\n",
      "slo.json");
  CHECK(s.threshold.enable);
  CHECK(s.threshold.cpuSuppressThresholdPercent == 40);
  CHECK(s.cpuBurst.policy == CpuBurstPolicy::kAuto);
  CHECK(contains(parseError("{\"cpuBurstStrategy\": {\"cpuBurstPercent\": \"200\"}}", "slo.json"),
                 "slo.json: spec.cpuBurstStrategy.cpuBurstPercent: expected an integer, got "
                 "string \"200\""));
}

TEST_CASE("duplicate keys are rejected where they are", "[slo_config]") {
  CHECK(parseError("resourceUsedThresholdWithBE:\n  enable: true\n  enable: false\n") ==
        "slo.yaml:3:3: duplicate key \"enable\"");
}

TEST_CASE("oversized files, alias bombs and deep nesting are refused", "[slo_config]") {
  std::string big = "extensions: {pad: \"" + std::string(kMaxSloConfigBytes, 'x') + "\"}\n";
  CHECK(contains(parseError(big), "more than the 1048576-byte limit"));

  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'f'; ++c) {
    std::string prev(1, static_cast<char>(c - 1));
    bomb += std::string(1, c) + ": &" + std::string(1, c) + " [";
    for (int i = 0; i < 10; ++i) bomb += (i ? ", *" : "*") + prev;
    bomb += "]\n";
  }
  bomb = "extensions:\n" + [&] {
    std::string indented;
    std::istringstream in(bomb);
    for (std::string line; std::getline(in, line);) indented += "  " + line + "\n";
    return indented;
  }();
  CHECK(contains(parseError(bomb), "more than 200000 values"));

  std::string deep = "extensions: {x: " + std::string(100, '[') + std::string(100, ']') + "}";
  CHECK(contains(parseError(deep), "nested deeper than 64 levels"));
  CHECK(parseError(std::string(100000, '[')) == "slo.yaml:1:1: invalid YAML: nested too deeply");
  CHECK(parseError("a: &a [*a]\n") == "slo.yaml:1:4: nested deeper than 64 levels");
}

TEST_CASE("text that is not UTF-8 is refused where it is", "[slo_config]") {
  CHECK(parseError("extensions: {x: \"caf\xe9\"}\n") == "slo.yaml:1:17: invalid UTF-8");
  CHECK(parseError("extensions: {\"\xc3\x28\": 1}\n") == "slo.yaml:1:14: invalid UTF-8");
  NodeSloSpec s = parseOk("extensions: {x: \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}\n");
  CHECK(at(s, "/extensions/x") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

TEST_CASE("an unsupported YAML tag is refused", "[slo_config]") {
  CHECK(parseError("extensions: {x: !custom 1}") == "slo.yaml:1:17: unsupported YAML tag !custom");
  CHECK(contains(parseError("extensions: {x: !!int abc}"), "\"abc\" is not a valid"));
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

namespace {

// The NodeSLO CRD's schema node for spec.<path...>.
YAML::Node crdSpec() {
  YAML::Node crd =
      YAML::LoadFile(test::fixturePath("koordinator/crd/slo.koordinator.sh_nodeslos.yaml"));
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
}

struct CrdBlock {
  std::vector<std::string> path;
  YAML::Node schema;
};

// The blocks this parser checks strictly.
std::vector<CrdBlock> strictCrdBlocks() {
  YAML::Node spec = crdSpec();
  std::vector<CrdBlock> out;
  out.push_back(
      {{"resourceUsedThresholdWithBE"}, spec["properties"]["resourceUsedThresholdWithBE"]});
  out.push_back({{"cpuBurstStrategy"}, spec["properties"]["cpuBurstStrategy"]});
  YAML::Node qos = spec["properties"]["resourceQOSStrategy"];
  out.push_back({{"resourceQOSStrategy"}, qos});
  for (const char* cls : {"lsrClass", "lsClass", "beClass", "systemClass", "cgroupRoot"}) {
    YAML::Node c = qos["properties"][cls];
    REQUIRE(c.IsMap());
    out.push_back({{"resourceQOSStrategy", cls}, c});
    for (const char* block : {"cpuQOS", "memoryQOS", "resctrlQOS"}) {
      REQUIRE(c["properties"][block].IsMap());
      out.push_back({{"resourceQOSStrategy", cls, block}, c["properties"][block]});
    }
  }
  return out;
}

std::string nest(const std::vector<std::string>& path, const std::string& leaf) {
  std::string out = leaf;
  for (auto it = path.rbegin(); it != path.rend(); ++it) out = *it + ": {" + out + "}";
  return out;
}

std::string pointer(const std::vector<std::string>& path, const std::string& name) {
  std::string out;
  for (const auto& p : path) out += "/" + p;
  return out + "/" + name;
}

}  // namespace

TEST_CASE("every field the NodeSLO CRD defines in the strict blocks is accepted", "[slo_config]") {
  const std::map<std::string, std::string> strings = {{"cpuSuppressPolicy", "cfsQuota"},
                                                      {"cpuEvictPolicy", "evictByAllocatable"},
                                                      {"policy", "auto"}};
  const std::map<std::string, int64_t> ints = {{"cfsQuotaBurstPercent", 100}};
  size_t checked = 0;
  for (const auto& block : strictCrdBlocks()) {
    for (const auto& prop : block.schema["properties"]) {
      const std::string name = prop.first.as<std::string>();
      const std::string type = prop.second["type"] ? prop.second["type"].as<std::string>() : "";
      json expected;
      if (type == "boolean") {
        expected = true;
      } else if (type == "integer") {
        int64_t v = 1;
        if (prop.second["minimum"]) v = std::max<int64_t>(prop.second["minimum"].as<int64_t>(), 1);
        if (ints.count(name)) v = ints.at(name);
        expected = v;
      } else if (type == "string") {
        INFO(name << ": add a valid sample for this string field");
        REQUIRE(strings.count(name));
        expected = strings.at(name);
      } else if (type == "object") {
        expected = json::object();
      } else {
        FAIL(name << " has CRD type " << type);
      }
      std::string yaml = nest(block.path, name + ": " + expected.dump());
      INFO(yaml);
      NodeSloSpec s = parseOk(yaml);
      const json& got = at(s, pointer(block.path, name));
      if (expected.is_object()) {
        CHECK(got.is_object());
      } else {
        CHECK(got == expected);
      }
      ++checked;
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("no value outside the NodeSLO CRD's minimum and maximum is accepted", "[slo_config]") {
  size_t checked = 0;
  for (const auto& block : strictCrdBlocks()) {
    for (const auto& prop : block.schema["properties"]) {
      const std::string name = prop.first.as<std::string>();
      for (const char* bound : {"minimum", "maximum"}) {
        if (!prop.second[bound]) continue;
        int64_t v = prop.second[bound].as<int64_t>() + (bound[1] == 'i' ? -1 : 1);
        std::string yaml = nest(block.path, name + ": " + std::to_string(v));
        INFO(yaml);
        std::string e = parseError(yaml);
        CHECK(contains(e, name + ": " + std::to_string(v) + " is "));
        ++checked;
      }
    }
  }
  CHECK(checked > 50);
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
