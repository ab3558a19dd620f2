// Tests for kube/pod (the Pod model, resource.Quantity) and kube/qos_class: quantity
// conversion as Kubernetes does it, hostile quantities, the QoS and priority classes.
// The PodList parser's tests are in test_pod_parser.cpp.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/pod.h"
#include "tests/kube/pod_test_helpers.h"
#include "tests/support/temp_tree.h"

namespace test_kube_pod {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::podtest;

// ---- quantities -------------------------------------------------------------------

TEST_CASE("cpu quantities convert to milli-cores as Quantity.MilliValue does", "[pod]") {
  CHECK(milli("100m") == 100);
  CHECK(milli("0.5") == 500);
  CHECK(milli(".5") == 500);
  CHECK(milli("1.") == 1000);
  CHECK(milli("1") == 1000);
  CHECK(milli("+2") == 2000);
  CHECK(milli("1.5") == 1500);
  CHECK(milli("1e3") == 1000000);
  CHECK(milli("1E3") == 1000000);
  CHECK(milli("1e+3") == 1000000);
  CHECK(milli("5e-3") == 5);
  CHECK(milli("1k") == 1000000);
  CHECK(milli("0") == 0);
  CHECK(milli("000") == 0);
  CHECK(milli("0.000") == 0);
  CHECK(milli("0m") == 0);
  CHECK(milli("007") == 7000);
  // Sub-milli values round up: "if you want some resources, you get some".
  CHECK(milli("0.1m") == 1);
  CHECK(milli("1u") == 1);
  CHECK(milli("1n") == 1);
  CHECK(milli("1.0001") == 1001);
  CHECK(milli("0.0001") == 1);
  CHECK(milli("1e-3") == 1);
  CHECK(milli("1e-4") == 1);
  CHECK(milli("1001u") == 2);
  CHECK(milli("1000u") == 1);
  // Negative values round away from zero, as Quantity does for int64 amounts.
  CHECK(milli("-100m") == -100);
  CHECK(milli("-0.1m") == -1);
  CHECK(milli("9223372036854775807m") == std::numeric_limits<int64_t>::max());
}

TEST_CASE("plain quantities round up to whole units as Quantity.Value does", "[pod]") {
  CHECK(plain("128Mi") == 128 * kMi);
  CHECK(plain("1G") == 1000000000);
  CHECK(plain("1k") == 1000);
  CHECK(plain("2.5Gi") == 5 * kGi / 2);
  CHECK(plain("1Ki") == 1024);
  CHECK(plain("1.5Ki") == 1536);
  CHECK(plain("0.3Ki") == 308);  // 307.2
  CHECK(plain("1Mi") == kMi);
  CHECK(plain("1Ti") == int64_t{1} << 40);
  CHECK(plain("1Pi") == int64_t{1} << 50);
  CHECK(plain("1Ei") == int64_t{1} << 60);
  CHECK(plain("7Ei") == int64_t{7} << 60);
  CHECK(plain("1M") == 1000000);
  CHECK(plain("1T") == 1000000000000);
  CHECK(plain("1P") == 1000000000000000);
  CHECK(plain("1E") == 1000000000000000000);
  CHECK(plain("5M") == 5000000);
  CHECK(plain("170Mi") == 178257920);
  CHECK(plain("3456Mi") == 3623878656);
  CHECK(plain("1e3") == 1000);
  CHECK(plain("1.G") == 1000000000);
  CHECK(plain("0.5") == 1);
  CHECK(plain("100m") == 1);
  CHECK(plain("1n") == 1);
  CHECK(plain("1000") == 1000);  // kubernetes.io/batch-cpu "1000": 1000 milli-cores
  CHECK(plain("4k") == 4000);    // kubernetes.io/batch-cpu "4k": 4 cores
  CHECK(plain("-1") == -1);
  CHECK(plain("-0.5") == -1);
  CHECK(plain("9223372036854775807") == std::numeric_limits<int64_t>::max());
  CHECK(plain("9223372036854775807000m") == std::numeric_limits<int64_t>::max());
  // Exact for long inputs: no double rounding anywhere.
  CHECK(plain("0.000000000000000000000000000001") == 1);
  CHECK(plain("0000000000000000000000000000000001") == 1);
  CHECK(plain("1.000000000000000000000000000001") == 2);
  CHECK(plain("9223372036854775806.5") == std::numeric_limits<int64_t>::max());
  CHECK(plain("1e-2147483648") == 1);
  CHECK(plain("0e2147483647") == 0);
  CHECK(plain("100000000000000000000000000000e-11") == 1000000000000000000);
}

TEST_CASE("a quantity beyond int64 is an error that quotes the text", "[pod]") {
  for (const char* text :
       {"9223372036854775808", "8Ei", "16Ei", "10E", "1e19", "9.3e18", "99999999999999999999999",
        "1e2147483647", "-9223372036854775808", "9223372036854775807.1", "8388608Ti"}) {
    auto v = parseQuantity(text);
    INFO(text);
    REQUIRE_FALSE(v.ok());
    CHECK(v.error().message == "quantity \"" + std::string(text) + "\" overflows int64");
  }
  // Fits as a value but not in milli-units.
  REQUIRE(parseQuantity("9223372036854775807").ok());
  auto m = parseQuantityMilli("9223372036854775807");
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().message == "quantity \"9223372036854775807\" overflows int64 in milli-units");
  CHECK_FALSE(parseQuantityMilli("9223372036854776").ok());
  CHECK(parseQuantityMilli("9223372036854775").ok());
}

TEST_CASE("a malformed quantity is an error that quotes the text", "[pod]") {
  const std::vector<std::string> texts = {"",
                                          "abc",
                                          "1K",
                                          "1kb",
                                          "1Gb",
                                          "1 ",
                                          " 1",
                                          "1e",
                                          "1E+",
                                          "1e3.5",
                                          "1ee3",
                                          "e3",
                                          "m",
                                          "Ki",
                                          "-",
                                          "+",
                                          ".",
                                          "-.",
                                          "1.2.3",
                                          "--1",
                                          "+-1",
                                          "1Ki1",
                                          "1mi",
                                          "0x10",
                                          "1,5",
                                          "Infinity",
                                          "NaN",
                                          "1e2147483648",
                                          "1e-2147483649",
                                          "1Gi ",
                                          "\xd9\xa1",
                                          std::string("1\0", 2),
                                          "1i",
                                          "1Kii"};
  for (const std::string& text : texts) {
    auto v = parseQuantity(text);
    INFO("text: " << text);
    REQUIRE_FALSE(v.ok());
    CHECK(v.error().message.rfind("invalid quantity \"", 0) == 0);
    CHECK_FALSE(parseQuantityMilli(text).ok());
  }
  CHECK(parseQuantity("abc").error().message == "invalid quantity \"abc\"");
  // Untrusted text is escaped and cut, so it cannot break or flood a log line.
  CHECK(parseQuantity("1\"\n").error().message == "invalid quantity \"1\\\"\\x0a\"");
  const std::string huge(100000, 'x');
  CHECK(parseQuantity(huge).error().message.size() < 120);
}

// ---- classification -----------------------------------------------------------------

TEST_CASE("toString spells QoS and priority classes as Kubernetes and koordinator do", "[pod]") {
  CHECK(std::string(toString(KubeQos::kGuaranteed)) == "Guaranteed");
  CHECK(std::string(toString(KubeQos::kBurstable)) == "Burstable");
  CHECK(std::string(toString(KubeQos::kBestEffort)) == "BestEffort");
  CHECK(std::string(toString(KoordQos::kNone)).empty());
  CHECK(std::string(toString(KoordQos::kLSE)) == "LSE");
  CHECK(std::string(toString(KoordQos::kLSR)) == "LSR");
  CHECK(std::string(toString(KoordQos::kLS)) == "LS");
  CHECK(std::string(toString(KoordQos::kBE)) == "BE");
  CHECK(std::string(toString(KoordQos::kSystem)) == "SYSTEM");
  CHECK(std::string(toString(PriorityClass::kNone)).empty());
  CHECK(std::string(toString(PriorityClass::kProd)) == "koord-prod");
  CHECK(std::string(toString(PriorityClass::kMid)) == "koord-mid");
  CHECK(std::string(toString(PriorityClass::kBatch)) == "koord-batch");
  CHECK(std::string(toString(PriorityClass::kFree)) == "koord-free");
}

TEST_CASE("the koordinator QoS label maps to its class and any other value to none", "[pod]") {
  const std::vector<std::pair<std::string, KoordQos>> cases = {
      {"LSE", KoordQos::kLSE},     {"LSR", KoordQos::kLSR},         {"LS", KoordQos::kLS},
      {"BE", KoordQos::kBE},       {"SYSTEM", KoordQos::kSystem},   {"be", KoordQos::kNone},
      {"Be", KoordQos::kNone},     {"", KoordQos::kNone},           {"LS ", KoordQos::kNone},
      {"system", KoordQos::kNone}, {"Guaranteed", KoordQos::kNone}, {"NONE", KoordQos::kNone}};
  for (const auto& [label, want] : cases) {
    INFO("label " << label);
    Json c = Json::array(
        {container("c", {{"cpu", "1"}, {"memory", "1Gi"}}, {{"cpu", "1"}, {"memory", "1Gi"}})});
    const Pod p = parseOne(makePod("u1", c, {{"koordinator.sh/qosClass", label}}));
    CHECK(p.koordQos == want);
    CHECK(p.labels.at("koordinator.sh/qosClass") == label);
    // An unknown label falls back to the kube QoS default, as koordinator's WithDefault.
    CHECK(p.qosWithDefault() == (want == KoordQos::kNone ? KoordQos::kLSR : want));
  }
  // Without the label.
  const Pod none = parseOne(makePod("u2", Json::array({container("c", nullptr, nullptr)})));
  CHECK(none.koordQos == KoordQos::kNone);
}

TEST_CASE("qosWithDefault maps the kube QoS when no koordinator label is set", "[pod]") {
  Pod p;
  p.kubeQos = KubeQos::kGuaranteed;
  CHECK(p.qosWithDefault() == KoordQos::kLSR);
  p.kubeQos = KubeQos::kBurstable;
  CHECK(p.qosWithDefault() == KoordQos::kLS);
  p.kubeQos = KubeQos::kBestEffort;
  CHECK(p.qosWithDefault() == KoordQos::kBE);
  // The label wins over the kube QoS.
  p.kubeQos = KubeQos::kGuaranteed;
  p.koordQos = KoordQos::kBE;
  CHECK(p.qosWithDefault() == KoordQos::kBE);
  p.kubeQos = KubeQos::kBestEffort;
  p.koordQos = KoordQos::kSystem;
  CHECK(p.qosWithDefault() == KoordQos::kSystem);
}

TEST_CASE("the priority class comes from its label, else from spec.priority ranges", "[pod]") {
  auto classOf = [](std::optional<int64_t> priority, std::optional<std::string> label) {
    Json labels = Json::object();
    if (label) labels["koordinator.sh/priority-class"] = *label;
    Json pod = makePod("u1", Json::array({container("c", nullptr, nullptr)}), labels);
    if (priority) pod["spec"]["priority"] = *priority;
    const Pod p = parseOne(pod);
    CHECK(p.priority ==
          (priority ? std::optional<int32_t>(static_cast<int32_t>(*priority)) : std::nullopt));
    return p.priorityClass;
  };
  const std::vector<std::pair<int64_t, PriorityClass>> ranges = {
      {9000, PriorityClass::kProd},
      {9500, PriorityClass::kProd},
      {9999, PriorityClass::kProd},
      {7000, PriorityClass::kMid},
      {7999, PriorityClass::kMid},
      {5000, PriorityClass::kBatch},
      {5999, PriorityClass::kBatch},
      {3000, PriorityClass::kFree},
      {3999, PriorityClass::kFree},
      {10000, PriorityClass::kNone},
      {8999, PriorityClass::kNone},
      {6500, PriorityClass::kNone},
      {4000, PriorityClass::kNone},
      {2999, PriorityClass::kNone},
      {0, PriorityClass::kNone},
      {-1, PriorityClass::kNone},
      {2000000000, PriorityClass::kNone},
      {2000001000, PriorityClass::kNone},
      {std::numeric_limits<int32_t>::max(), PriorityClass::kNone},
      {std::numeric_limits<int32_t>::min(), PriorityClass::kNone}};
  for (const auto& [priority, want] : ranges) {
    INFO("priority " << priority);
    CHECK(classOf(priority, std::nullopt) == want);
  }
  CHECK(classOf(std::nullopt, std::nullopt) == PriorityClass::kNone);
  CHECK(classOf(std::nullopt, "koord-prod") == PriorityClass::kProd);
  CHECK(classOf(std::nullopt, "koord-mid") == PriorityClass::kMid);
  CHECK(classOf(std::nullopt, "koord-batch") == PriorityClass::kBatch);
  CHECK(classOf(std::nullopt, "koord-free") == PriorityClass::kFree);
  // The label wins over the priority value.
  CHECK(classOf(3000, "koord-prod") == PriorityClass::kProd);
  CHECK(classOf(9000, "koord-batch") == PriorityClass::kBatch);
  // A present but unknown label decides alone, as koordinator's GetPodPriorityClassRaw.
  CHECK(classOf(5000, "koord-batchx") == PriorityClass::kNone);
  CHECK(classOf(9000, "") == PriorityClass::kNone);
  CHECK(classOf(9000, "prod") == PriorityClass::kNone);
}

TEST_CASE("the creation time is read, absent is unknown, and a malformed one names its path",
          "[pod]") {
  Json pod = makePod("u1", Json::array({container("c", {{"cpu", "1"}}, nullptr)}));
  CHECK_FALSE(parseOne(pod).created);
  pod["metadata"]["creationTimestamp"] = "2026-11-26T01:12:15Z";
  REQUIRE(parseOne(pod).created);
  CHECK(parseOne(pod).created->time_since_epoch() == std::chrono::seconds(1795655535));
  pod["metadata"]["creationTimestamp"] = "yesterday";
  auto list = parsePodList(Json{{"items", Json::array({pod})}}.dump());
  REQUIRE_FALSE(list.ok());
  CHECK(list.error().message.find("items[0].metadata.creationTimestamp: time \"yesterday\"") == 0);
}

TEST_CASE("the pod request is the containers' sum, raised to an init container's, plus overhead",
          "[pod]") {
  Json pod =
      makePod("u1", Json::array({container("a", {{"cpu", "500m"}, {"memory", "1Gi"}}, nullptr),
                                 container("b", {{"cpu", "250m"}}, nullptr)}));
  pod["spec"]["initContainers"] =
      Json::array({container("init", {{"cpu", "1"}, {"memory", "512Mi"}}, nullptr)});
  Pod p = parseOne(pod);
  CHECK(p.requestCpuMilli() == 1000);                   // max(750, 1000)
  CHECK(p.requestMemoryBytes() == (int64_t{1} << 30));  // max(1 GiB, 512 MiB)
  pod["spec"]["overhead"] = {{"cpu", "100m"}, {"memory", "64Mi"}};
  p = parseOne(pod);
  CHECK(p.requestCpuMilli() == 1100);
  CHECK(p.requestMemoryBytes() == (int64_t{1} << 30) + (64 << 20));
  CHECK(p.priorityWithDefault() == PriorityClass::kProd);  // Burstable: LS
}

}  // namespace test_kube_pod
