// Shared by the Pod model's tests (test_pod.cpp) and the PodList parser's
// (test_pod_parser.cpp): fixture reading, parsing shortcuts, hand-built pods.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "kube/pod.h"
#include "tests/support/temp_tree.h"

namespace koord::podtest {

using Json = nlohmann::json;

inline constexpr int64_t kMi = int64_t{1} << 20;
inline constexpr int64_t kGi = int64_t{1} << 30;

inline std::string readFixture(const std::string& rel) {
  const std::string path = test::fixturePath(rel);
  std::ifstream in(path, std::ios::binary);
  INFO("reading " << path);
  REQUIRE(in.good());
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

inline std::vector<Pod> parseOk(const std::string& json) {
  auto pods = parsePodList(json);
  INFO((pods ? std::string() : pods.error().message));
  REQUIRE(pods.ok());
  return std::move(pods).value();
}

inline std::string parseError(const std::string& json) {
  auto pods = parsePodList(json);
  REQUIRE_FALSE(pods.ok());
  return pods.error().message;
}

// One pod from a hand-written list of one.
inline Pod parseOne(const Json& pod) {
  Json list = {{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", Json::array({pod})}};
  auto pods = parseOk(list.dump());
  REQUIRE(pods.size() == 1);
  return pods[0];
}

inline const Pod& byUid(const std::vector<Pod>& pods, const std::string& uid) {
  for (const Pod& p : pods) {
    if (p.uid == uid) return p;
  }
  FAIL("no pod with uid " << uid);
  throw std::logic_error("unreachable");
}

inline int64_t milli(std::string_view q) {
  auto v = parseQuantityMilli(q);
  INFO("quantity " << q << ": " << (v ? std::string() : v.error().message));
  REQUIRE(v.ok());
  return *v;
}

inline int64_t plain(std::string_view q) {
  auto v = parseQuantity(q);
  INFO("quantity " << q << ": " << (v ? std::string() : v.error().message));
  REQUIRE(v.ok());
  return *v;
}

// A pod with the given labels and containers, no status.qosClass (so the parser
// computes the kube QoS) and a running containerd container per spec container.
inline Json makePod(const std::string& uid, Json containers, Json labels = Json::object()) {
  Json statuses = Json::array();
  for (const Json& c : containers) {
    statuses.push_back(
        {{"name", c["name"]}, {"containerID", "containerd://id-" + c["name"].get<std::string>()}});
  }
  return {{"metadata",
           {{"uid", uid}, {"namespace", "default"}, {"name", "pod-" + uid}, {"labels", labels}}},
          {"spec", {{"containers", containers}}},
          {"status", {{"phase", "Running"}, {"containerStatuses", statuses}}}};
}

inline Json container(const std::string& name, Json requests, Json limits) {
  Json resources = Json::object();
  if (!requests.is_null()) resources["requests"] = requests;
  if (!limits.is_null()) resources["limits"] = limits;
  return {{"name", name}, {"image", "busybox"}, {"resources", resources}};
}

inline KubeQos computedQos(Json containers, Json initContainers = Json::array()) {
  Json pod = makePod("u1", std::move(containers));
  if (!initContainers.empty()) pod["spec"]["initContainers"] = initContainers;
  return parseOne(pod).kubeQos;
}

inline const std::vector<std::string> kCaptureVersions = {
    "1.16", "1.18", "1.22", "1.25", "1.28", "1.30", "1.31", "1.32", "1.33", "1.34", "1.35"};

inline std::string capturePath(const std::string& version) {
  return "kubelet/k8s-" + version + "/pods.json";
}

}  // namespace koord::podtest
