// Tests for kube/nrt_object (the NodeResourceTopology the agent creates and updates)
// and kube/kubelet_config (/configz and cpu_manager_state), on real payloads: the
// object a kube-apiserver 1.32 stored (tests/fixtures/kube-api/nrt-*.body) and a
// kubeadm kubelet's /configz (tests/fixtures/kubelet/configz/).
#include <catch2/catch.hpp>

#include <cerrno>
#include <string>

#include <nlohmann/json.hpp>

#include "base/read_file.h"
#include "kube/kubelet_config.h"
#include "kube/nrt_object.h"
#include "tests/support/temp_tree.h"

namespace test_kube_nrt_object {  // this file's own names: tests build as unity chunks

using namespace koord;
using nlohmann::json;

namespace {

json fixture(const std::string& rel) {
  auto text = readFile(test::fixturePath(rel));
  REQUIRE(text.ok());
  return json::parse(*text);
}

// The content the stored object carries (its three annotations, two resources).
NrtContent storedContent() {
  NrtContent c;
  c.annotations = {
      {kAnnoCpuManagerPolicy, R"({"policy":"none"})"},
      {kAnnoCpuSharedPools, R"([{"socket":0,"node":0,"cpuset":"0-1"}])"},
      {kAnnoCpuTopology,
       R"({"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":1,"core":1,"socket":0,"node":0}]})"}};
  c.topologyPolicy = "None";
  c.zones = {NrtZone{"node-0", "Node", {{"cpu", "2"}, {"memory", "24Gi"}}}};
  return c;
}

}  // namespace

TEST_CASE("the stored object says what its content says, so nothing is sent", "[nrt]") {
  const json stored = fixture("kube-api/nrt-get.body");
  CHECK(nrtDiffers(stored, storedContent()) == std::nullopt);
}

TEST_CASE("annotations compare as JSON and quantities as values", "[nrt]") {
  json stored = fixture("kube-api/nrt-get.body");
  NrtContent c = storedContent();
  c.annotations[kAnnoCpuSharedPools] = R"([ {"cpuset":"0-1", "node":0, "socket":0} ])";
  c.zones[0].resources[1].quantity = "25769803776";  // 24Gi in bytes
  CHECK(nrtDiffers(stored, c) == std::nullopt);

  c.annotations[kAnnoCpuSharedPools] = R"([{"socket":0,"node":0,"cpuset":"1"}])";
  CHECK(nrtDiffers(stored, c) == "annotation node.koordinator.sh/cpu-shared-pools");
  c = storedContent();
  c.annotations[kAnnoPodCpuAllocs] = "null";  // present on one side only
  CHECK(nrtDiffers(stored, c) == "annotation node.koordinator.sh/pod-cpu-allocs");
  c = storedContent();
  c.topologyPolicy = "SingleNUMANodePodLevel";
  CHECK(nrtDiffers(stored, c) == "topologyPolicies");
  c = storedContent();
  c.zones[0].resources[0].quantity = "3";
  CHECK(nrtDiffers(stored, c) == "zones: node-0 cpu");
  c = storedContent();
  c.zones.push_back(NrtZone{"node-1", "Node", {{"cpu", "2"}}});
  CHECK(nrtDiffers(stored, c) == "zones: count");
  // An annotation the agent does not manage is nobody's business.
  stored["metadata"]["annotations"]["example.com/other"] = "x";
  CHECK(nrtDiffers(stored, storedContent()) == std::nullopt);
}

TEST_CASE("a new object is named after the node, owned by it, and labelled Koordinator's",
          "[nrt]") {
  const json obj = newNrtObject("rig-node", "uid-1", storedContent());
  CHECK(obj.at("apiVersion") == "topology.node.k8s.io/v1alpha1");
  CHECK(obj.at("kind") == "NodeResourceTopology");
  CHECK(obj.at("metadata").at("name") == "rig-node");
  CHECK(obj.at("metadata").at("labels").at("app.kubernetes.io/managed-by") == "Koordinator");
  const json& owner = obj.at("metadata").at("ownerReferences").at(0);
  CHECK(owner.at("kind") == "Node");
  CHECK(owner.at("uid") == "uid-1");
  CHECK(owner.at("controller") == true);
  CHECK(obj.at("topologyPolicies") == json::array({"None"}));
  CHECK(obj.at("zones").at(0).at("resources").at(1) == json{{"name", "memory"},
                                                            {"capacity", "24Gi"},
                                                            {"allocatable", "24Gi"},
                                                            {"available", "24Gi"}});
  // What we would create, stored, says the same as the content.
  CHECK(nrtDiffers(obj, storedContent()) == std::nullopt);
  CHECK_FALSE(newNrtObject("n", "", storedContent()).at("metadata").contains("ownerReferences"));
}

TEST_CASE("an update keeps others' annotations and resources and drops zones we do not have",
          "[nrt]") {
  json stored = fixture("kube-api/nrt-get.body");
  stored["metadata"]["annotations"]["example.com/other"] = "x";
  stored["zones"][0]["resources"].push_back(json{
      {"name", "nvidia.com/gpu"}, {"capacity", "1"}, {"allocatable", "1"}, {"available", "1"}});
  stored["zones"].push_back(
      json{{"name", "node-9"}, {"type", "Node"}, {"resources", json::array()}});
  NrtContent c = storedContent();
  c.annotations[kAnnoCpuSharedPools] = R"([{"socket":0,"node":0,"cpuset":"1"}])";
  const json body = applyNrtContent(stored, c);
  CHECK(body.at("metadata").at("resourceVersion") == "254");  // a concurrent change is a 409
  CHECK_FALSE(body.at("metadata").contains("managedFields"));
  CHECK(body.at("metadata").at("annotations").at("example.com/other") == "x");
  CHECK(body.at("metadata").at("annotations").at(kAnnoCpuSharedPools) ==
        c.annotations.at(kAnnoCpuSharedPools));
  REQUIRE(body.at("zones").size() == 1);
  CHECK(body.at("zones").at(0).at("resources").size() == 3);  // cpu, memory, and the GPU kept
  CHECK(nrtDiffers(body, c) == std::nullopt);
}

TEST_CASE("a kubeadm kubelet's /configz gives its CPU and topology manager settings",
          "[kubelet_config]") {
  auto text = readFile(test::fixturePath("kubelet/configz/kubeadm-v1.30-none.json"));
  REQUIRE(text.ok());
  auto cfg = parseKubeletConfigz(*text);
  REQUIRE(cfg.ok());
  CHECK(cfg->cpuManagerPolicy == "none");
  CHECK(cfg->cpuManagerPolicyOptions.empty());
  CHECK(cfg->reservedSystemCpus.empty());
  CHECK(cfg->reservedCpuMilli == 0);
  CHECK(cfg->topologyManagerPolicy == "none");
  CHECK(cfg->topologyManagerScope == "container");

  // The same kubelet switched to the static policy with reservations.
  json doc = json::parse(*text);
  auto& k = doc["kubeletconfig"];
  k["cpuManagerPolicy"] = "static";
  k["cpuManagerPolicyOptions"] = {{"full-pcpus-only", "true"}};
  k["kubeReserved"] = {{"cpu", "500m"}, {"memory", "1Gi"}};
  k["systemReserved"] = {{"cpu", "1"}};
  auto stat = parseKubeletConfigz(doc.dump());
  REQUIRE(stat.ok());
  CHECK(stat->cpuManagerPolicy == "static");
  CHECK(stat->cpuManagerPolicyOptions.at("full-pcpus-only") == "true");
  CHECK(stat->reservedCpuMilli == 1500);
}

TEST_CASE("a malformed /configz or checkpoint names the field", "[kubelet_config]") {
  auto a = parseKubeletConfigz(R"({"kubeletconfig":{"cpuManagerPolicyOptions":{"x":1}}})");
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().message ==
        "kubelet /configz: kubeletconfig.cpuManagerPolicyOptions.x: got a number, want a string");
  auto b = parseKubeletConfigz(R"({"kubeletconfig":{"kubeReserved":{"cpu":"lots"}}})");
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().message.find("kubeletconfig.kubeReserved.cpu") != std::string::npos);
  CHECK_FALSE(parseKubeletConfigz("<html>").ok());
  CHECK_FALSE(parseKubeletConfigz("{}").ok());
  auto old = parseCpuManagerCheckpoint(R"({"policyName":"static","entries":{"c1":"0-1"}})",
                                       "/var/lib/kubelet/cpu_manager_state");
  REQUIRE_FALSE(old.ok());
  CHECK(old.error().message.find("/var/lib/kubelet/cpu_manager_state: entries.c1") == 0);
  auto ok = parseCpuManagerCheckpoint(
      R"({"policyName":"static","defaultCpuSet":"0-3","entries":{"u":{"a":"4-5"}},"checksum":9})",
      "f");
  REQUIRE(ok.ok());
  CHECK(ok->entries.at("u").at("a") == "4-5");
  CHECK(ok->defaultCpuSet == "0-3");
}

TEST_CASE("an absent checkpoint pins nothing; an unreadable or bad one is an error",
          "[kubelet_config]") {
  auto absent = readCpuManagerCheckpoint(makeError("cpu_manager_state: gone", ENOENT), "f");
  REQUIRE(absent.ok());
  CHECK_FALSE(absent->has_value());
  CHECK_FALSE(readCpuManagerCheckpoint(makeError("f: Permission denied", EACCES), "f").ok());
  auto bad = readCpuManagerCheckpoint(Result<std::string>(std::string("{\"entries\":7}")), "f");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "f: entries: got a number");
  auto good = readCpuManagerCheckpoint(Result<std::string>(std::string("{}")), "f");
  REQUIRE(good.ok());
  CHECK(good->has_value());
}

}  // namespace test_kube_nrt_object
