// The YAML subset and JSON reading rules (qos/yaml_json.h), through parseNodeSlo so
// each message is checked as the operator sees it.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "qos/slo_config.h"
#include "tests/qos/slo_test_helpers.h"

namespace test_qos_yaml_json {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::slo_test;

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

TEST_CASE("YAML and JSON syntax errors carry the file, line and column", "[slo_config]") {
  CHECK(parseError("resourceUsedThresholdWithBE: [1,\nenable: 2\n") ==
        "slo.yaml:3:1: invalid YAML: end of sequence flow not found");
  std::string json = "{\n  \"resourceUsedThresholdWithBE\": {\n    \"enable\": true,,\n  }\n}\n";
  CHECK_THAT(parseError(json, "slo.json"), Catch::StartsWith("slo.json:3:"));
  CHECK(contains(parseError("a:\n  b: 1\n b: 2\n"), "slo.yaml:3:"));
}

TEST_CASE("a document that begins with a comma is an error, not a parser that never ends",
          "[slo_config]") {
  // yaml-cpp 0.7 alone loops on these, holding an empty document per turn (the
  // fuzzer's ",#" took 1.7 GB in 14 s).
  CHECK(parseError(",#") ==
        "slo.yaml:1:1: invalid YAML: no node can begin here (a document "
        "that begins with ',')");
  CHECK(contains(parseError("---\ncpuBurstStrategy: {}\n---\n,\n"), "slo.yaml:4:1: "));
  CHECK(contains(parseError("- a\n,"), "no node can begin here"));
  // Marked documents still count one each: two documents are refused as before.
  CHECK(contains(parseError("---\ncpuBurstStrategy: {}\n---\ncpuBurstStrategy: {}\n"), "document"));
  CHECK(parseOk("---\ncpuBurstStrategy: {}\n...\n").cpuBurst.policy == parseOk("").cpuBurst.policy);
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

}  // namespace test_qos_yaml_json
