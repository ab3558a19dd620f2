// Tests for kube/pod_parser (PodList JSON): every real kubelet capture in tests/fixtures/kubelet
// (k8s 1.16-1.35 and a legacy payload, see tests/fixtures/SOURCES.md), Koordinator's documented
// example pods hand-converted to JSON, and hostile input: wrong types at every level,
// truncation, byte flips, deep nesting.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/pod.h"
#include "tests/kube/pod_test_helpers.h"
#include "tests/support/temp_tree.h"

namespace test_kube_pod_parser {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::podtest;

TEST_CASE("the kube QoS is taken from status.qosClass when the kubelet reports it", "[pod]") {
  Json guaranteed = Json::array(
      {container("c", {{"cpu", "1"}, {"memory", "1Gi"}}, {{"cpu", "1"}, {"memory", "1Gi"}})});
  Json pod = makePod("u1", guaranteed);
  CHECK(parseOne(pod).kubeQos == KubeQos::kGuaranteed);
  pod["status"]["qosClass"] = "BestEffort";
  CHECK(parseOne(pod).kubeQos == KubeQos::kBestEffort);
  pod["status"]["qosClass"] = "Burstable";
  CHECK(parseOne(pod).kubeQos == KubeQos::kBurstable);
  // An unknown or empty value is recomputed from the spec.
  pod["status"]["qosClass"] = "Gold";
  CHECK(parseOne(pod).kubeQos == KubeQos::kGuaranteed);
  pod["status"]["qosClass"] = "";
  CHECK(parseOne(pod).kubeQos == KubeQos::kGuaranteed);
  pod["status"]["qosClass"] = nullptr;
  CHECK(parseOne(pod).kubeQos == KubeQos::kGuaranteed);
}

TEST_CASE("the kube QoS is computed from the spec as kubectl does when status has none", "[pod]") {
  const Json both = {{"cpu", "500m"}, {"memory", "128Mi"}};
  SECTION("guaranteed: every container has cpu and memory limits equal to its requests") {
    CHECK(computedQos(Json::array({container("a", both, both), container("b", both, both)})) ==
          KubeQos::kGuaranteed);
    // Same values spelled differently are equal.
    CHECK(computedQos(Json::array({container("a", {{"cpu", "0.5"}, {"memory", "134217728"}},
                                             both)})) == KubeQos::kGuaranteed);
  }
  SECTION("guaranteed: requests left unset default to the limits") {
    CHECK(computedQos(Json::array({container("a", nullptr, both)})) == KubeQos::kGuaranteed);
    CHECK(computedQos(Json::array({container("a", {{"cpu", "500m"}}, both)})) ==
          KubeQos::kGuaranteed);
  }
  SECTION("burstable: requests below limits, or a limit missing") {
    CHECK(computedQos(Json::array({container("a", {{"cpu", "100m"}, {"memory", "128Mi"}},
                                             both)})) == KubeQos::kBurstable);
    CHECK(computedQos(Json::array({container("a", {{"cpu", "100m"}}, nullptr)})) ==
          KubeQos::kBurstable);
    CHECK(computedQos(Json::array({container("a", nullptr, {{"memory", "170Mi"}})})) ==
          KubeQos::kBurstable);
    CHECK(computedQos(Json::array({container("a", both, both),
                                   container("b", nullptr, nullptr)})) == KubeQos::kBurstable);
    CHECK(computedQos(Json::array(
              {container("a", both, both), container("b", {{"cpu", "1"}}, {{"cpu", "1"}})})) ==
          KubeQos::kBurstable);
    // An explicit zero request is not defaulted to the limit.
    CHECK(computedQos(Json::array({container("a", {{"cpu", "0"}, {"memory", "128Mi"}}, both)})) ==
          KubeQos::kBurstable);
  }
  SECTION("besteffort: no cpu or memory request or limit above zero") {
    CHECK(computedQos(Json::array({container("a", nullptr, nullptr)})) == KubeQos::kBestEffort);
    CHECK(computedQos(Json::array()) == KubeQos::kBestEffort);
    CHECK(computedQos(Json::array({container("a", {{"cpu", "0"}, {"memory", "0"}},
                                             {{"cpu", "0"}})})) == KubeQos::kBestEffort);
    // Batch and other extended resources do not count.
    CHECK(computedQos(Json::array({container(
              "a", {{"kubernetes.io/batch-cpu", "1000"}, {"kubernetes.io/batch-memory", "1Gi"}},
              {{"kubernetes.io/batch-cpu", "1000"}, {"kubernetes.io/batch-memory", "1Gi"}})})) ==
          KubeQos::kBestEffort);
    CHECK(computedQos(Json::array({container("a", {{"ephemeral-storage", "1Gi"}}, nullptr)})) ==
          KubeQos::kBestEffort);
    Json noSpec = {{"metadata", {{"uid", "u"}}}};
    CHECK(parseOne(noSpec).kubeQos == KubeQos::kBestEffort);
  }
  SECTION("init containers count like containers") {
    // An init container without limits makes a guaranteed pod burstable.
    CHECK(computedQos(Json::array({container("a", both, both)}),
                      Json::array({container("init", {{"cpu", "100m"}}, nullptr)})) ==
          KubeQos::kBurstable);
    // An init container with requests makes a best-effort pod burstable.
    CHECK(computedQos(Json::array({container("a", nullptr, nullptr)}),
                      Json::array({container("init", {{"memory", "1Mi"}}, nullptr)})) ==
          KubeQos::kBurstable);
    CHECK(computedQos(Json::array({container("a", both, both)}),
                      Json::array({container("init", both, both)})) == KubeQos::kGuaranteed);
    // Even an init container without resources keeps the pod from being guaranteed.
    CHECK(computedQos(Json::array({container("a", both, both)}),
                      Json::array({container("init", nullptr, nullptr)})) == KubeQos::kBurstable);
  }
  SECTION("sums are compared, as kubectl does") {
    // Per container the requests differ from the limits, but the pod's sums are equal.
    CHECK(computedQos(Json::array(
              {container("a", {{"cpu", "1"}, {"memory", "1Gi"}}, {{"cpu", "2"}, {"memory", "1Gi"}}),
               container("b", {{"cpu", "2"}, {"memory", "1Gi"}},
                         {{"cpu", "1"}, {"memory", "1Gi"}})})) == KubeQos::kGuaranteed);
  }
}

TEST_CASE("batch resources are read in milli-cores and bytes and summed over containers", "[pod]") {
  Json containers = Json::array(
      {container("a",
                 {{"kubernetes.io/batch-cpu", "1000"}, {"kubernetes.io/batch-memory", "3456Mi"}},
                 {{"kubernetes.io/batch-cpu", "2k"}, {"kubernetes.io/batch-memory", "4Gi"}}),
       container("b", {{"kubernetes.io/batch-cpu", "500"}}, nullptr),
       container("c", nullptr, nullptr)});
  Json pod = makePod("u1", containers, {{"koordinator.sh/qosClass", "BE"}});
  pod["spec"]["initContainers"] =
      Json::array({container("init", {{"kubernetes.io/batch-cpu", "7000"}}, nullptr)});
  const Pod p = parseOne(pod);
  REQUIRE(p.containers.size() == 3);
  CHECK(p.containers[0].requests.batchCpuMilli == 1000);
  CHECK(p.containers[0].requests.batchMemoryBytes == 3456 * kMi);
  CHECK(p.containers[0].limits.batchCpuMilli == 2000);
  CHECK(p.containers[0].limits.batchMemoryBytes == 4 * kGi);
  CHECK_FALSE(p.containers[0].requests.cpuMilli);
  CHECK_FALSE(p.containers[0].requests.memoryBytes);
  CHECK(p.containers[1].requests.batchCpuMilli == 500);
  CHECK_FALSE(p.containers[1].limits.batchCpuMilli);
  CHECK_FALSE(p.containers[2].requests.batchCpuMilli);
  REQUIRE(p.initContainers.size() == 1);
  CHECK(p.initContainers[0].init);
  CHECK(p.initContainers[0].requests.batchCpuMilli == 7000);
  // A regular init container has finished by the time the pod runs: not counted.
  CHECK(p.batchCpuRequestMilli() == 1500);
  CHECK(Pod{}.batchCpuRequestMilli() == 0);
  // A crafted spec saturates instead of overflowing.
  Pod big;
  big.containers.resize(3);
  for (Container& c : big.containers)
    c.requests.batchCpuMilli = std::numeric_limits<int64_t>::max() / 2;
  CHECK(big.batchCpuRequestMilli() == std::numeric_limits<int64_t>::max());
}

TEST_CASE("koordinator's documented BE pod with batch resources parses as koordlet reads it",
          "[pod]") {
  // Hand-converted from /work/shared/fixtures/koordinator/docs/pod-be-batch-resources.yaml
  // (koordinator.sh user manual cpu-evict.md), values kept exactly; the kubelet
  // fields metadata.uid/namespace and status are added.
  const std::string json = R"({"kind":"PodList","apiVersion":"v1","items":[{
    "apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"be-pod-demo","namespace":"default","uid":"be-pod-demo-uid",
                "labels":{"koordinator.sh/qosClass":"BE"}},
    "spec":{"containers":[{"args":["-c","4","--vm","1"],"command":["stress"],
              "image":"polinux/stress","imagePullPolicy":"Always","name":"stress",
              "resources":{"limits":{"kubernetes.io/batch-cpu":"4k","kubernetes.io/batch-memory":"4Gi"},
                           "requests":{"kubernetes.io/batch-cpu":"4k","kubernetes.io/batch-memory":"4Gi"}}}],
            "restartPolicy":"Always","schedulerName":"default-scheduler",
            "priorityClassName":"koord-batch"},
    "status":{"phase":"Running","containerStatuses":[{"name":"stress","containerID":"containerd://0123abcd"}]}}]})";
  const auto pods = parseOk(json);
  REQUIRE(pods.size() == 1);
  const Pod& p = pods[0];
  CHECK(p.name == "be-pod-demo");
  CHECK(p.koordQos == KoordQos::kBE);
  CHECK(p.qosWithDefault() == KoordQos::kBE);
  CHECK(p.kubeQos == KubeQos::kBestEffort);  // no cpu or memory at all
  // priorityClassName alone does not classify: the admission controller sets
  // spec.priority from it, and this manifest predates that.
  CHECK_FALSE(p.priority);
  CHECK(p.priorityClass == PriorityClass::kNone);
  REQUIRE(p.containers.size() == 1);
  CHECK(p.containers[0].requests.batchCpuMilli == 4000);
  CHECK(p.containers[0].limits.batchCpuMilli == 4000);
  CHECK(p.containers[0].requests.batchMemoryBytes == 4 * kGi);
  CHECK(p.containers[0].limits.batchMemoryBytes == 4 * kGi);
  CHECK(p.containers[0].runtime == "containerd");
  CHECK(p.containers[0].id == "0123abcd");
  CHECK(p.batchCpuRequestMilli() == 4000);
}

TEST_CASE("koordinator's documented mutated pod gets batch class and 1000 milli batch-cpu",
          "[pod]") {
  // The spec, priority and qosClass label of
  // /work/shared/fixtures/koordinator/docs/pod-colocation-after-mutation.yaml.txt
  // (colocation-profile.md), values kept; that file is not valid YAML ("..."
  // elisions, and its unquoted label values 1000/true are not strings), so its
  // other labels and annotations are left out.
  const std::string json = R"({"kind":"PodList","items":[{
    "metadata":{"uid":"test-pod-uid","name":"test-pod","labels":{"koordinator.sh/qosClass":"BE"}},
    "spec":{"terminationGracePeriodSeconds":30,"priority":5000,"priorityClassName":"koord-batch",
            "schedulerName":"koord-scheduler",
            "containers":[{"name":"app","image":"nginx:1.15.1",
              "resources":{"limits":{"kubernetes.io/batch-cpu":"1000","kubernetes.io/batch-memory":"3456Mi"},
                           "requests":{"kubernetes.io/batch-cpu":"1000","kubernetes.io/batch-memory":"3456Mi"}}}]}}]})";
  const auto pods = parseOk(json);
  REQUIRE(pods.size() == 1);
  const Pod& p = pods[0];
  CHECK(p.priority == 5000);
  CHECK(p.priorityClass == PriorityClass::kBatch);
  CHECK(p.koordQos == KoordQos::kBE);
  CHECK(p.phase.empty());
  REQUIRE(p.containers.size() == 1);
  CHECK(p.containers[0].requests.batchCpuMilli == 1000);
  CHECK(p.containers[0].limits.batchMemoryBytes == 3456 * kMi);
  CHECK(p.containers[0].runtime.empty());
  CHECK(p.containers[0].id.empty());
}

TEST_CASE("koordinator's documented LS pods: the label wins, an annotation is not the label",
          "[pod]") {
  // Hand-converted from /work/shared/fixtures/koordinator/docs/pod-ls-nginx.yaml
  // (cpu-qos.md): LS label on a pod whose resources make it Guaranteed.
  const std::string nginx = R"({"kind":"PodList","items":[{
    "metadata":{"uid":"ls-pod-demo-uid","name":"ls-pod-demo","labels":{"koordinator.sh/qosClass":"LS"}},
    "spec":{"containers":[{"command":["nginx","-g","daemon off; worker_processes 4;"],
              "image":"docker.io/koordinatorsh/nginx:v1.18-koord-example","imagePullPolicy":"Always",
              "name":"nginx","resources":{"limits":{"cpu":"4","memory":"10Gi"},
                                          "requests":{"cpu":"4","memory":"10Gi"}}}],
            "restartPolicy":"Never","schedulerName":"default-scheduler"}}]})";
  const Pod ls = parseOk(nginx).at(0);
  CHECK(ls.kubeQos == KubeQos::kGuaranteed);
  CHECK(ls.koordQos == KoordQos::kLS);
  CHECK(ls.qosWithDefault() == KoordQos::kLS);
  CHECK(ls.containers.at(0).requests.cpuMilli == 4000);
  CHECK(ls.containers.at(0).limits.memoryBytes == 10 * kGi);

  // Hand-converted from the Pod in /work/shared/fixtures/koordinator/docs/
  // pod-ls-redis-memory-qos.yaml (memory-qos.md): koordinator.sh/qosClass is
  // given as an annotation there, which koordlet does not read (labels only).
  const std::string redis = R"({"kind":"PodList","items":[{
    "metadata":{"uid":"redis-demo-uid","name":"redis-demo","labels":{"name":"redis-demo"},
                "annotations":{"koordinator.sh/memoryQOS":"{\"policy\": \"auto\"}",
                               "koordinator.sh/qosClass":"LS"}},
    "spec":{"containers":[{"name":"redis","image":"redis:5.0.4",
              "command":["redis-server","/redis-master/redis.conf"],
              "env":[{"name":"MASTER","value":"true"}],"ports":[{"containerPort":6379}],
              "resources":{"limits":{"cpu":"2","memory":"6Gi"},"requests":{"cpu":"2","memory":"2Gi"}},
              "volumeMounts":[{"mountPath":"/redis-master-data","name":"data"},
                              {"mountPath":"/redis-master","name":"config"}]}],
            "volumes":[{"name":"data","emptyDir":{}},
                       {"name":"config","configMap":{"name":"redis-demo-config",
                        "items":[{"key":"redis-config","path":"redis.conf"}]}}],
            "nodeName":null}}]})";
  const Pod r = parseOk(redis).at(0);
  CHECK(r.koordQos == KoordQos::kNone);
  CHECK(r.annotations.at("koordinator.sh/qosClass") == "LS");
  CHECK(r.annotations.at("koordinator.sh/memoryQOS") == "{\"policy\": \"auto\"}");
  CHECK(r.kubeQos == KubeQos::kBurstable);  // memory request 2Gi < limit 6Gi
  CHECK(r.qosWithDefault() == KoordQos::kLS);
  CHECK(r.containers.at(0).requests.memoryBytes == 2 * kGi);
  CHECK(r.containers.at(0).limits.memoryBytes == 6 * kGi);
}

// ---- container ids ---------------------------------------------------------------------

TEST_CASE("container runtime and id come from containerID for every known runtime", "[pod]") {
  for (const std::string runtime : {"containerd", "docker", "cri-o", "pouch", "kata"}) {
    INFO(runtime);
    Json pod = makePod("u1", Json::array({container("c", nullptr, nullptr)}));
    pod["status"]["containerStatuses"][0]["containerID"] = runtime + "://0123456789abcdef";
    const Pod p = parseOne(pod);
    // An unknown runtime ("kata") is kept as written; the cgroup layout rejects it.
    CHECK(p.containers.at(0).runtime == runtime);
    CHECK(p.containers.at(0).id == "0123456789abcdef");
  }
}

TEST_CASE("containers are matched to their statuses by name, init containers separately", "[pod]") {
  Json pod =
      makePod("u1", Json::array({container("a", nullptr, nullptr), container("b", nullptr, nullptr),
                                 container("c", nullptr, nullptr)}));
  pod["spec"]["initContainers"] = Json::array({container("setup", nullptr, nullptr)});
  pod["status"]["containerStatuses"] = Json::array(
      {{{"name", "b"}, {"containerID", "docker://bbb"}},
       {{"name", "a"}, {"containerID", "cri-o://aaa"}},
       {{"name", "ghost"}, {"containerID", "containerd://ggg"}},  // not in the spec: ignored
       {{"name", "setup"}, {"containerID", "containerd://wrong-list"}}});
  pod["status"]["initContainerStatuses"] =
      Json::array({{{"name", "setup"}, {"containerID", "containerd://sss"}},
                   {{"name", "a"}, {"containerID", "containerd://wrong-list"}}});
  const Pod p = parseOne(pod);
  REQUIRE(p.containers.size() == 3);
  CHECK(p.containers[0].name == "a");
  CHECK(p.containers[0].runtime == "cri-o");
  CHECK(p.containers[0].id == "aaa");
  CHECK_FALSE(p.containers[0].init);
  CHECK(p.containers[1].runtime == "docker");
  CHECK(p.containers[1].id == "bbb");
  // No status yet: both empty.
  CHECK(p.containers[2].runtime.empty());
  CHECK(p.containers[2].id.empty());
  REQUIRE(p.initContainers.size() == 1);
  CHECK(p.initContainers[0].init);
  CHECK(p.initContainers[0].runtime == "containerd");
  CHECK(p.initContainers[0].id == "sss");

  // An empty or absent containerID (waiting container) leaves both empty.
  pod["status"]["containerStatuses"] =
      Json::array({{{"name", "a"}, {"containerID", ""}}, {{"name", "b"}}});
  const Pod waiting = parseOne(pod);
  CHECK(waiting.containers[0].runtime.empty());
  CHECK(waiting.containers[0].id.empty());
  CHECK(waiting.containers[1].runtime.empty());
  CHECK(waiting.containers[1].id.empty());
}

TEST_CASE("a containerID that is not runtime://id is an error naming its path", "[pod]") {
  for (const std::string id : {"abc", "://abc", "docker://", "docker:/abc", "a://b://c", "://"}) {
    INFO(id);
    Json pod = makePod("u1", Json::array({container("c", nullptr, nullptr)}));
    pod["status"]["containerStatuses"][0]["containerID"] = id;
    Json list = {{"kind", "PodList"}, {"items", Json::array({pod})}};
    CHECK(parseError(list.dump()) ==
          "items[0].status.containerStatuses[0].containerID: invalid "
          "container ID \"" +
              id + "\" (want <runtime>://<id>)");
  }
}

// ---- real kubelet captures ---------------------------------------------------------------

TEST_CASE("every real kubelet capture parses with its pod count and QoS mix", "[pod]") {
  struct Capture {
    std::string version;
    size_t pods;
    int guaranteed;
    int burstable;
    int bestEffort;
    const char* runtime;
  };
  const std::vector<Capture> captures = {
      {"1.16", 16, 1, 6, 9, "docker"},      {"1.18", 16, 1, 6, 9, "docker"},
      {"1.22", 25, 2, 8, 15, "containerd"}, {"1.25", 25, 2, 8, 15, "containerd"},
      {"1.28", 23, 2, 13, 8, "containerd"}, {"1.30", 23, 2, 13, 8, "containerd"},
      {"1.31", 23, 2, 13, 8, "containerd"}, {"1.32", 23, 2, 13, 8, "containerd"},
      {"1.33", 23, 2, 13, 8, "containerd"}, {"1.34", 24, 2, 14, 8, "containerd"},
      {"1.35", 24, 2, 14, 8, "containerd"}};
  REQUIRE(captures.size() == kCaptureVersions.size());
  for (const Capture& c : captures) {
    INFO("k8s " << c.version);
    const auto pods = parseOk(readFixture(capturePath(c.version)));
    CHECK(pods.size() == c.pods);
    int guaranteed = 0, burstable = 0, bestEffort = 0;
    for (const Pod& p : pods) {
      INFO("pod " << p.ns << "/" << p.name);
      CHECK_FALSE(p.uid.empty());
      CHECK_FALSE(p.ns.empty());
      CHECK_FALSE(p.name.empty());
      CHECK_FALSE(p.phase.empty());
      // No capture carries koordinator labels or koordinator priorities.
      CHECK(p.koordQos == KoordQos::kNone);
      CHECK(p.priorityClass == PriorityClass::kNone);
      CHECK(p.initContainers.empty());
      REQUIRE_FALSE(p.containers.empty());
      for (const Container& ct : p.containers) {
        CHECK_FALSE(ct.init);
        CHECK_FALSE(ct.requests.batchCpuMilli);
        if (ct.id.empty()) {
          CHECK(ct.runtime.empty());  // a pending container
        } else {
          CHECK(ct.runtime == c.runtime);
          CHECK(ct.id.size() == 64);
        }
      }
      guaranteed += p.kubeQos == KubeQos::kGuaranteed;
      burstable += p.kubeQos == KubeQos::kBurstable;
      bestEffort += p.kubeQos == KubeQos::kBestEffort;
    }
    CHECK(guaranteed == c.guaranteed);
    CHECK(burstable == c.burstable);
    CHECK(bestEffort == c.bestEffort);
  }
}

TEST_CASE("coredns in every capture has the uid, id, QoS and resources the kubelet reported",
          "[pod]") {
  struct Coredns {
    std::string version;
    std::string uid;
    std::string name;
    std::string runtime;
    std::string id;
  };
  const std::vector<Coredns> cases = {
      {"1.16", "b3894557-599e-4065-b11f-74ed49fdb582", "coredns-5644d7b6d9-nz2s7", "docker",
       "c6fb6656f14d0aec126100aacb51cb4172b2fc0037663569390c82e3f429ed72"},
      {"1.18", "ffc5a2aa-d3c6-4b73-aa30-2da68fbf94de", "coredns-66bff467f8-hm847", "docker",
       "ccfe6b89b8cf6216b08c6f21efcd31d314002d63c194423e77a69fc704653f86"},
      {"1.22", "930209d8-f360-45e9-823a-b3294b0082c0", "coredns-7bdbbf6bf5-79lr2", "containerd",
       "2926489ef49e8d07be0e5b52c9b5614f5ad82002d4c7efb460d46a2e861c848d"},
      {"1.25", "44d31070-ccf8-4f7d-ba2b-fd4a578836eb", "coredns-565d847f94-xmmbs", "containerd",
       "d2e4f7150da2090f5a3bbcdddc519c202823ddbc547fa5161c66673b22ddaddb"},
      {"1.28", "f60cfe75-0d1f-4879-8644-7d832f6695c6", "coredns-5dd5756b68-xmx7l", "containerd",
       "b724b214b033bc20a0435db0e674db39d7953a3ce36f3f5136e1f38202ff00ea"},
      {"1.30", "7eb23a9b-3919-4c77-a805-edab6d928cdf", "coredns-7db6d8ff4d-tflps", "containerd",
       "a97e92dde48889905acfe40887f62e236211925ea36acca367a9af3887bdab33"},
      {"1.31", "a49e0345-24c7-4c39-b2fd-07b6b3fc99d0", "coredns-6f6b679f8f-hktpp", "containerd",
       "bd353f7a4ecac9ea34778e1863e4674ae3ebe80f7261294980f9c3e5f4f1d639"},
      {"1.32", "e681a331-5048-4e0e-a8b4-31b0ee5dd85a", "coredns-668d6bf9bc-psw5k", "containerd",
       "6a1218f4351657f376e8206125b34e7aff055cacd5961a40a8e6d20a9dafec40"},
      {"1.33", "323e9f63-81d7-42ba-b135-bad3e40a7bc7", "coredns-674b8bbfcf-lj26m", "containerd",
       "f6d4912bc628f976ffb03ffc8f993d7c60158cfe967454646c24c4229e5229c7"},
      {"1.34", "d765336d-6173-4caa-997f-8c63f9ae32aa", "coredns-66bc5c9577-d98t2", "containerd",
       "ff7f3417e620238051fc79fbc772b6262f7c416ac7f86ea82344e236af66be34"},
      {"1.35", "36447428-81f8-45eb-b825-414de2e8012b", "coredns-7d764666f9-qdcxt", "containerd",
       "facedc3f02c7efea0daff3590c408c2fb5820f875b93cb4c757df0d10d73786f"},
  };
  for (const Coredns& c : cases) {
    INFO("k8s " << c.version);
    const auto pods = parseOk(readFixture(capturePath(c.version)));
    const Pod& p = byUid(pods, c.uid);
    CHECK(p.ns == "kube-system");
    CHECK(p.name == c.name);
    CHECK(p.phase == "Running");
    CHECK(p.kubeQos == KubeQos::kBurstable);
    CHECK(p.qosWithDefault() == KoordQos::kLS);
    CHECK(p.priority == 2000000000);  // system-cluster-critical: no koordinator class
    CHECK(p.priorityClass == PriorityClass::kNone);
    CHECK(p.labels.at("k8s-app") == "kube-dns");
    REQUIRE(p.containers.size() == 1);
    const Container& ct = p.containers[0];
    CHECK(ct.name == "coredns");
    CHECK(ct.runtime == c.runtime);
    CHECK(ct.id == c.id);
    CHECK(ct.requests.cpuMilli == 100);
    CHECK(ct.requests.memoryBytes == 70 * kMi);
    CHECK_FALSE(ct.limits.cpuMilli);
    CHECK(ct.limits.memoryBytes == 170 * kMi);
    CHECK(p.batchCpuRequestMilli() == 0);
  }
}

TEST_CASE("the Guaranteed pods of the 1.16 and 1.35 captures parse with their exact values",
          "[pod]") {
  // 1.16: a pending pod whose container was never created (empty containerID).
  const auto old = parseOk(readFixture(capturePath("1.16")));
  const Pod& pending = byUid(old, "5bac24b4-b0fd-47ca-881c-3578da4768be");
  CHECK(pending.ns == "scraper");
  CHECK(pending.name == "e2e-container-creating");
  CHECK(pending.phase == "Pending");
  CHECK(pending.kubeQos == KubeQos::kGuaranteed);
  CHECK(pending.qosWithDefault() == KoordQos::kLSR);
  CHECK(pending.priority == 0);
  REQUIRE(pending.containers.size() == 1);
  CHECK(pending.containers[0].name == "alpine");
  CHECK(pending.containers[0].runtime.empty());
  CHECK(pending.containers[0].id.empty());
  CHECK(pending.containers[0].requests.cpuMilli == 5);
  CHECK(pending.containers[0].limits.cpuMilli == 5);
  CHECK(pending.containers[0].requests.memoryBytes == 5000000);
  CHECK(pending.containers[0].limits.memoryBytes == 5000000);
  // 1.16: docker runtime, a BestEffort pod.
  const Pod& ksm = byUid(old, "e4cf2a32-153c-40c1-a997-d2f29196dfc3");
  CHECK(ksm.name == "e2e-kube-state-metrics-887cff974-4jr26");
  CHECK(ksm.kubeQos == KubeQos::kBestEffort);
  CHECK(ksm.containers.at(0).runtime == "docker");
  CHECK(ksm.containers.at(0).id ==
        "f02888f90651eb88d17616646ec4d8a3a7c97533fdd57f096ae236a48dfb7a53");
  CHECK_FALSE(ksm.containers.at(0).requests.cpuMilli);
  CHECK_FALSE(ksm.containers.at(0).limits.memoryBytes);

  // 1.35: kindnet, Guaranteed, containerd.
  const auto recent = parseOk(readFixture(capturePath("1.35")));
  const Pod& kindnet = byUid(recent, "ebb73de1-03ec-4c34-bda3-bb8a44f01c2b");
  CHECK(kindnet.ns == "kube-system");
  CHECK(kindnet.name == "kindnet-zkpn8");
  CHECK(kindnet.kubeQos == KubeQos::kGuaranteed);
  REQUIRE(kindnet.containers.size() == 1);
  CHECK(kindnet.containers[0].name == "kindnet-cni");
  CHECK(kindnet.containers[0].runtime == "containerd");
  CHECK(kindnet.containers[0].id ==
        "d8d42efd0bf1d231a739597470d876aba084f8480722678ccd5fef8df5cbce10");
  CHECK(kindnet.containers[0].requests.cpuMilli == 100);
  CHECK(kindnet.containers[0].limits.cpuMilli == 100);
  CHECK(kindnet.containers[0].requests.memoryBytes == 50 * kMi);
  CHECK(kindnet.containers[0].limits.memoryBytes == 50 * kMi);
  // 1.35: a Burstable pod with cpu and memory requests and limits.
  const Pod& hpa = byUid(recent, "3ea3ef66-5f89-43b7-b88b-6ee26f5b18a4");
  CHECK(hpa.name == "e2e-hpa-6cd8d99884-tggnr");
  CHECK(hpa.kubeQos == KubeQos::kBurstable);
  CHECK(hpa.containers.at(0).requests.cpuMilli == 200);
  CHECK(hpa.containers.at(0).limits.cpuMilli == 500);
  CHECK_FALSE(hpa.containers.at(0).requests.memoryBytes);
  const Pod& failed = byUid(recent, "0961a396-5fff-45fe-a970-19b2aac96e5d");
  CHECK(failed.phase == "Failed");
  CHECK(failed.kubeQos == KubeQos::kBestEffort);
}

TEST_CASE("the legacy docker-era payload parses and its missing qosClass is computed", "[pod]") {
  const auto pods = parseOk(readFixture("kubelet/legacy/kubelet_pods_payload.json"));
  REQUIRE(pods.size() == 4);

  const Pod& infra = pods[0];
  CHECK(infra.uid == "d2026c86-11a3-11e8-a084-080027352a02");
  CHECK(infra.ns == "kube-system");
  CHECK(infra.name == "newrelic-infra-rz225");
  CHECK(infra.kubeQos == KubeQos::kBurstable);
  CHECK_FALSE(infra.priority);
  REQUIRE(infra.containers.size() == 1);
  CHECK(infra.containers[0].runtime == "docker");
  CHECK(infra.containers[0].id ==
        "69d7203a8f2d2d027ffa51d61002eac63357f22a17403363ef79e66d1c3146b2");
  CHECK(infra.containers[0].requests.cpuMilli == 100);
  CHECK(infra.containers[0].requests.memoryBytes == 100 * kMi);
  CHECK(infra.containers[0].limits.memoryBytes == 100 * kMi);
  CHECK_FALSE(infra.containers[0].limits.cpuMilli);

  // No status.qosClass: computed from two containers with limits == requests.
  const Pod& ksm = pods[1];
  CHECK(ksm.uid == "f89b6c09-11a3-11e8-a084-080027352a02");
  CHECK(ksm.name == "kube-state-metrics-57f4659995-6n2qq");
  CHECK(ksm.phase == "Pending");
  CHECK(ksm.kubeQos == KubeQos::kGuaranteed);
  REQUIRE(ksm.containers.size() == 2);
  CHECK(ksm.containers[0].name == "kube-state-metrics");
  CHECK(ksm.containers[0].requests.cpuMilli == 101);
  CHECK(ksm.containers[0].limits.memoryBytes == 102 * kMi);
  CHECK(ksm.containers[1].name == "addon-resizer");
  CHECK(ksm.containers[1].limits.cpuMilli == 100);
  CHECK(ksm.containers[1].requests.memoryBytes == 30 * kMi);
  CHECK(ksm.containers[0].id.empty());
  CHECK(ksm.containers[1].runtime.empty());

  // No status.qosClass and no resources: BestEffort; an evicted pod.
  const Pod& sh = pods[2];
  CHECK(sh.uid == "dc378485-4565-11e9-822c-080027ecada5");
  CHECK(sh.ns == "default");
  CHECK(sh.phase == "Failed");
  CHECK(sh.kubeQos == KubeQos::kBestEffort);

  const Pod& kcm = pods[3];
  CHECK(kcm.uid == "38d78cbd438e068d417c11c848b26f09");
  CHECK(kcm.priority == 2000000000);
  CHECK(kcm.kubeQos == KubeQos::kBurstable);
  CHECK(kcm.annotations.count("kubernetes.io/config.hash") == 1);
  CHECK(kcm.containers.at(0).id ==
        "4c3ce07424670ccd46561eb1498a2759de4da4a7c2cd460fef147afefe4db150");
}

TEST_CASE("the kube QoS computed from the spec matches the kubelet's in every capture", "[pod]") {
  for (const std::string& version : kCaptureVersions) {
    INFO("k8s " << version);
    const std::string text = readFixture(capturePath(version));
    const auto reported = parseOk(text);
    Json list = Json::parse(text);
    for (Json& item : list["items"]) item["status"].erase("qosClass");
    const auto computed = parseOk(list.dump());
    REQUIRE(computed.size() == reported.size());
    for (size_t i = 0; i < reported.size(); ++i) {
      INFO("pod " << reported[i].name);
      CHECK(computed[i].kubeQos == reported[i].kubeQos);
    }
  }
}

// ---- errors ---------------------------------------------------------------------------

TEST_CASE("text that is not JSON is an error carrying the parser's message", "[pod]") {
  for (const std::string text : {"", "{", "garbage", "nul", "{\"kind\":\"PodList\",}", "[1,2",
                                 "{\"items\":[{]}", "\xff\xfe", "{\"a\":\"\xff\"}", "1 2"}) {
    INFO(text);
    const std::string message = parseError(text);
    CHECK(message.rfind("not JSON: ", 0) == 0);
    CHECK(message.find("parse error") != std::string::npos);
    CHECK(message.find("[json.exception") == std::string::npos);
    for (char c : message) CHECK((c >= 0x20 && c < 0x7f));
  }
  // A capture cut short anywhere.
  const std::string full = readFixture(capturePath("1.35"));
  for (size_t cut = 0; cut < full.size(); cut += 997) {
    INFO("cut at " << cut);
    CHECK(parseError(full.substr(0, cut)).rfind("not JSON: ", 0) == 0);
  }
  CHECK(parseError(full.substr(0, full.rfind('}'))).rfind("not JSON: ", 0) == 0);
}

TEST_CASE("a JSON value that is not a PodList is rejected", "[pod]") {
  CHECK(parseError("[]") == "not a PodList: expected a JSON object, got array");
  CHECK(parseError("\"PodList\"") == "not a PodList: expected a JSON object, got string");
  CHECK(parseError("42") == "not a PodList: expected a JSON object, got number");
  CHECK(parseError("null") == "not a PodList: expected a JSON object, got null");
  CHECK(parseError("true") == "not a PodList: expected a JSON object, got boolean");
  CHECK(parseError(R"({"kind":"Pod","apiVersion":"v1","metadata":{"uid":"x"}})") ==
        "not a PodList: kind \"Pod\"");
  CHECK(parseError(R"({"kind":"NodeList","items":[]})") == "not a PodList: kind \"NodeList\"");
  CHECK(parseError(R"({"kind":5,"items":[]})") == "kind: expected string, got number");
  CHECK(parseError("{\"kind\":\"Pod\\u0000\\n\"}") == "not a PodList: kind \"Pod\\x00\\x0a\"");
}

TEST_CASE("items must be an array; absent, null or empty items mean no pods", "[pod]") {
  CHECK(parseError(R"({"kind":"PodList","items":{}})") == "items: expected array, got object");
  CHECK(parseError(R"({"kind":"PodList","items":"pods"})") == "items: expected array, got string");
  CHECK(parseError(R"({"kind":"PodList","items":1})") == "items: expected array, got number");
  CHECK(parseOk(R"({"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]})").empty());
  CHECK(parseOk(R"({"kind":"PodList","items":null})").empty());
  CHECK(parseOk(R"({"kind":"PodList"})").empty());
  CHECK(parseOk("{}").empty());
}

TEST_CASE("a non-object item or a missing uid fails the whole list with the item's path", "[pod]") {
  Json list = {{"kind", "PodList"}, {"items", Json::array()}};
  for (int i = 0; i < 5; ++i) {
    list["items"].push_back(
        makePod("uid-" + std::to_string(i), Json::array({container("c", nullptr, nullptr)})));
  }
  REQUIRE(parseOk(list.dump()).size() == 5);

  Json missingUid = list;
  missingUid["items"][3]["metadata"].erase("uid");
  CHECK(parseError(missingUid.dump()) == "items[3].metadata.uid: missing");
  Json emptyUid = list;
  emptyUid["items"][3]["metadata"]["uid"] = "";
  CHECK(parseError(emptyUid.dump()) == "items[3].metadata.uid: missing");
  Json nullUid = list;
  nullUid["items"][4]["metadata"]["uid"] = nullptr;
  CHECK(parseError(nullUid.dump()) == "items[4].metadata.uid: missing");
  Json noMetadata = list;
  noMetadata["items"][0].erase("metadata");
  CHECK(parseError(noMetadata.dump()) == "items[0].metadata: missing");
  Json notObject = list;
  notObject["items"][1] = 7;
  CHECK(parseError(notObject.dump()) == "items[1]: expected object, got number");
  notObject["items"][1] = nullptr;
  CHECK(parseError(notObject.dump()) == "items[1]: expected object, got null");
}

TEST_CASE("a wrong type at any level is an error naming the JSON path", "[pod]") {
  // A three-pod list; the mutations hit the last pod so the index is in the path.
  Json base = {{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", Json::array()}};
  for (int i = 0; i < 3; ++i) {
    Json pod = makePod("uid-" + std::to_string(i),
                       Json::array({container("a", {{"cpu", "100m"}}, {{"cpu", "1"}}),
                                    container("b", {{"memory", "1Gi"}}, {{"cpu", "1"}})}),
                       {{"app", "x"}, {"koordinator.sh/qosClass", "LS"}});
    pod["metadata"]["annotations"] = {{"note", "y"}};
    pod["spec"]["priority"] = 0;
    pod["spec"]["initContainers"] = Json::array({container("init", nullptr, nullptr)});
    pod["status"]["qosClass"] = "Burstable";
    pod["status"]["initContainerStatuses"] =
        Json::array({{{"name", "init"}, {"containerID", "containerd://i"}}});
    base["items"].push_back(pod);
  }
  REQUIRE(parseOk(base.dump()).size() == 3);

  struct Case {
    std::string pointer;
    Json value;
    std::string message;
  };
  const std::string p = "items[2]";
  const std::vector<Case> cases = {
      {"/kind", Json::array(), "kind: expected string, got array"},
      {"/items/2/metadata", "x", p + ".metadata: expected object, got string"},
      {"/items/2/metadata/uid", 5, p + ".metadata.uid: expected string, got number"},
      {"/items/2/metadata/uid", Json::object(), p + ".metadata.uid: expected string, got object"},
      {"/items/2/metadata/namespace", Json::array(),
       p + ".metadata.namespace: expected string, got array"},
      {"/items/2/metadata/name", true, p + ".metadata.name: expected string, got boolean"},
      {"/items/2/metadata/labels", "x", p + ".metadata.labels: expected object, got string"},
      {"/items/2/metadata/labels", Json::array(),
       p + ".metadata.labels: expected object, got array"},
      {"/items/2/metadata/labels/app", 1, p + ".metadata.labels.app: expected string, got number"},
      {"/items/2/metadata/labels/koordinator.sh~1qosClass", true,
       p + ".metadata.labels[\"koordinator.sh/qosClass\"]: expected string, got boolean"},
      {"/items/2/metadata/labels/a\"b", nullptr,
       p + ".metadata.labels[\"a\\\"b\"]: expected string, got null"},
      {"/items/2/metadata/annotations", 1.5,
       p + ".metadata.annotations: expected object, got number"},
      {"/items/2/metadata/annotations/note", Json::object(),
       p + ".metadata.annotations.note: expected string, got object"},
      {"/items/2/spec", Json::array(), p + ".spec: expected object, got array"},
      {"/items/2/spec/priority", "100", p + ".spec.priority: expected an integer, got string"},
      {"/items/2/spec/priority", 1.5, p + ".spec.priority: expected an integer, got number"},
      {"/items/2/spec/priority", 3000000000LL, p + ".spec.priority: out of int32 range"},
      {"/items/2/spec/priority", -3000000000LL, p + ".spec.priority: out of int32 range"},
      {"/items/2/spec/priority", std::numeric_limits<uint64_t>::max(),
       p + ".spec.priority: out of int32 range"},
      {"/items/2/spec/containers", Json::object(),
       p + ".spec.containers: expected array, got object"},
      {"/items/2/spec/containers/0", "c", p + ".spec.containers[0]: expected object, got string"},
      {"/items/2/spec/containers/1", nullptr, p + ".spec.containers[1]: expected object, got null"},
      {"/items/2/spec/containers/0/name", 1,
       p + ".spec.containers[0].name: expected string, got number"},
      {"/items/2/spec/containers/1/name", "", p + ".spec.containers[1].name: missing"},
      {"/items/2/spec/containers/0/resources", 1,
       p + ".spec.containers[0].resources: expected object, got number"},
      {"/items/2/spec/containers/0/resources/limits", Json::array(),
       p + ".spec.containers[0].resources.limits: expected object, got array"},
      {"/items/2/spec/containers/1/resources/requests", "1",
       p + ".spec.containers[1].resources.requests: expected object, got string"},
      {"/items/2/spec/containers/1/resources/limits/cpu", "abc",
       p + ".spec.containers[1].resources.limits.cpu: invalid quantity \"abc\""},
      {"/items/2/spec/containers/1/resources/limits/cpu", "10E",
       p + ".spec.containers[1].resources.limits.cpu: quantity \"10E\" overflows int64 in "
           "milli-units"},
      {"/items/2/spec/containers/0/resources/requests/memory", true,
       p + ".spec.containers[0].resources.requests.memory: expected a quantity string, got "
           "boolean"},
      {"/items/2/spec/containers/0/resources/requests/memory", "1Gb",
       p + ".spec.containers[0].resources.requests.memory: invalid quantity \"1Gb\""},
      {"/items/2/spec/containers/0/resources/requests/kubernetes.io~1batch-cpu", Json::object(),
       p + ".spec.containers[0].resources.requests[\"kubernetes.io/batch-cpu\"]: expected a "
           "quantity string, got object"},
      {"/items/2/spec/containers/0/resources/limits/kubernetes.io~1batch-memory", "4 Gi",
       p + ".spec.containers[0].resources.limits[\"kubernetes.io/batch-memory\"]: invalid quantity "
           "\"4 Gi\""},
      {"/items/2/spec/initContainers", "x", p + ".spec.initContainers: expected array, got string"},
      {"/items/2/spec/initContainers/0/name", nullptr, p + ".spec.initContainers[0].name: missing"},
      {"/items/2/spec/initContainers/0/resources/limits/cpu", Json::array(),
       p + ".spec.initContainers[0].resources.limits.cpu: expected a quantity string, got array"},
      {"/items/2/status", 1, p + ".status: expected object, got number"},
      {"/items/2/status/phase", 1, p + ".status.phase: expected string, got number"},
      {"/items/2/status/qosClass", Json::array(),
       p + ".status.qosClass: expected string, got array"},
      {"/items/2/status/containerStatuses", Json::object(),
       p + ".status.containerStatuses: expected array, got object"},
      {"/items/2/status/containerStatuses/1", 1,
       p + ".status.containerStatuses[1]: expected object, got number"},
      {"/items/2/status/containerStatuses/0/name", nullptr,
       p + ".status.containerStatuses[0].name: missing"},
      {"/items/2/status/containerStatuses/0/name", false,
       p + ".status.containerStatuses[0].name: expected string, got boolean"},
      {"/items/2/status/containerStatuses/0/containerID", 1,
       p + ".status.containerStatuses[0].containerID: expected string, got number"},
      {"/items/2/status/initContainerStatuses", "x",
       p + ".status.initContainerStatuses: expected array, got string"},
      {"/items/2/status/initContainerStatuses/0/containerID", "bad",
       p + ".status.initContainerStatuses[0].containerID: invalid container ID \"bad\" (want "
           "<runtime>://<id>)"},
  };
  for (const Case& c : cases) {
    INFO(c.pointer << " = " << c.value.dump());
    Json mutated = base;
    mutated[Json::json_pointer(c.pointer)] = c.value;
    CHECK(parseError(mutated.dump()) == c.message);
  }
}

TEST_CASE("null or absent optional fields read as unset", "[pod]") {
  Json pod =
      makePod("u1", Json::array({container("c", {{"cpu", nullptr}, {"memory", "1Mi"}}, nullptr)}));
  pod["metadata"]["labels"] = nullptr;
  pod["metadata"]["annotations"] = nullptr;
  pod["metadata"]["namespace"] = nullptr;
  pod["spec"]["priority"] = nullptr;
  pod["spec"]["initContainers"] = nullptr;
  pod["status"]["initContainerStatuses"] = nullptr;
  pod["status"]["phase"] = nullptr;
  const Pod p = parseOne(pod);
  CHECK(p.labels.empty());
  CHECK(p.annotations.empty());
  CHECK(p.ns.empty());
  CHECK(p.phase.empty());
  CHECK_FALSE(p.priority);
  CHECK(p.initContainers.empty());
  CHECK_FALSE(p.containers.at(0).requests.cpuMilli);
  CHECK(p.containers.at(0).requests.memoryBytes == kMi);
  CHECK(p.kubeQos == KubeQos::kBurstable);

  Json bare = {{"metadata", {{"uid", "bare"}}}, {"spec", nullptr}, {"status", nullptr}};
  const Pod b = parseOne(bare);
  CHECK(b.uid == "bare");
  CHECK(b.containers.empty());
  CHECK(b.kubeQos == KubeQos::kBestEffort);
  CHECK(b.koordQos == KoordQos::kNone);
}

TEST_CASE("a synthetic list of 5000 pods parses", "[pod]") {
  std::string json = R"({"kind":"PodList","apiVersion":"v1","metadata":{},"items":[)";
  for (int i = 0; i < 5000; ++i) {
    if (i > 0) json += ',';
    const std::string n = std::to_string(i);
    json +=
        R"({"metadata":{"name":"pod-)" + n + R"(","namespace":"ns-)" + std::to_string(i % 50) +
        R"(","uid":"00000000-0000-0000-0000-)" + std::string(12 - n.size(), '0') + n +
        R"(","labels":{"app":"a)" + n + R"(","koordinator.sh/qosClass":")" + (i % 2 ? "BE" : "LS") +
        R"("}},"spec":{"priority":)" + std::to_string(i % 2 ? 5500 : 9500) +
        R"(,"containers":[{"name":"main","resources":{"requests":{"cpu":"100m","memory":"64Mi","kubernetes.io/batch-cpu":")" +
        std::to_string(i) + R"("},"limits":{"cpu":"1","memory":"128Mi"}}},{"name":"sidecar"}]},)" +
        R"("status":{"phase":"Running","qosClass":"Burstable","containerStatuses":[)" +
        R"({"name":"main","containerID":"containerd://main-)" + n + R"("},)" +
        R"({"name":"sidecar","containerID":"containerd://side-)" + n + R"("}]}})";
  }
  json += "]}";
  const auto pods = parseOk(json);
  REQUIRE(pods.size() == 5000);
  const Pod& last = pods[4999];
  CHECK(last.uid == "00000000-0000-0000-0000-000000004999");
  CHECK(last.ns == "ns-49");
  CHECK(last.koordQos == KoordQos::kBE);
  CHECK(last.priorityClass == PriorityClass::kBatch);
  CHECK(last.containers.at(0).id == "main-4999");
  CHECK(last.containers.at(1).id == "side-4999");
  CHECK(last.batchCpuRequestMilli() == 4999);
  CHECK(pods[10].priorityClass == PriorityClass::kProd);
  CHECK(pods[10].koordQos == KoordQos::kLS);
  int64_t total = 0;
  for (const Pod& p : pods) total += p.batchCpuRequestMilli();
  CHECK(total == int64_t{4999} * 5000 / 2);
}

TEST_CASE("hostile JSON never throws or crashes the parser", "[pod]") {
  SECTION("deep nesting") {
    const std::string deepArray = std::string(100000, '[') + std::string(100000, ']');
    CHECK(parseError(deepArray) == "not a PodList: expected a JSON object, got array");
    std::string deepItems = R"({"items":[{"metadata":{"uid":"u"},"spec":{"x":)";
    deepItems += std::string(100000, '[') + std::string(100000, ']') + "}}]}";
    CHECK(parseOk(deepItems).size() == 1);
    std::string deepObject;
    for (int i = 0; i < 50000; ++i) deepObject += "{\"a\":";
    deepObject += '1';
    deepObject.append(50000, '}');
    CHECK(parseOk(deepObject).empty());
  }
  SECTION("every value of a real pod replaced by every JSON type") {
    const Json list = Json::parse(readFixture(capturePath("1.35")));
    Json one = {{"kind", "PodList"}, {"items", Json::array({list["items"][0]})}};
    const Json flat = one.flatten();
    const std::vector<Json> replacements = {nullptr,       true,          0, -1, 1.5, "", "x",
                                            Json::array(), Json::object()};
    int parsed = 0, failed = 0;
    for (const auto& [pointer, value] : flat.items()) {
      for (const Json& r : replacements) {
        Json mutated = one;
        mutated[Json::json_pointer(pointer)] = r;
        bool ok = false;
        REQUIRE_NOTHROW(ok = parsePodList(mutated.dump()).ok());
        if (ok) {
          ++parsed;
        } else {
          ++failed;
        }
      }
    }
    CHECK(parsed > 0);
    CHECK(failed > 0);
  }
  SECTION("random byte flips in a real capture") {
    const std::string full = readFixture(capturePath("1.22"));
    std::mt19937 rng(12345);
    std::uniform_int_distribution<size_t> pos(0, full.size() - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int round = 0; round < 300; ++round) {
      std::string mutated = full;
      for (int k = 0; k < 1 + round % 4; ++k) mutated[pos(rng)] = static_cast<char>(byte(rng));
      REQUIRE_NOTHROW((void)parsePodList(mutated));
    }
  }
}

TEST_CASE("a pod with a deletionTimestamp is terminating, absent or null it is not", "[pod]") {
  Json pod = makePod("u1", Json::array({container("c", {{"cpu", "1"}}, nullptr)}));
  CHECK_FALSE(parseOne(pod).terminating);
  pod["metadata"]["deletionTimestamp"] = nullptr;
  CHECK_FALSE(parseOne(pod).terminating);
  pod["metadata"]["deletionTimestamp"] = "2026-11-26T01:12:15Z";  // as on an evicted pod
  CHECK(parseOne(pod).terminating);
  pod["metadata"]["deletionTimestamp"] = 5;
  auto list = parsePodList(Json{{"items", Json::array({pod})}}.dump());
  REQUIRE_FALSE(list.ok());
  CHECK(list.error().message.find("items[0].metadata.deletionTimestamp") != std::string::npos);
}

}  // namespace test_kube_pod_parser
