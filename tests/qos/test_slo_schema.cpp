// The NodeSLO schema and its checks (qos/slo_schema.h): types, ranges, unknown
// fields, orderings, and agreement with the NodeSLO CRD.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "qos/slo_config.h"
#include "tests/qos/slo_test_helpers.h"

namespace test_qos_slo_schema {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::slo_test;

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

}  // namespace test_qos_slo_schema
