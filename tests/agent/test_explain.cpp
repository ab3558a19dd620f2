// Tests for agent/explain (GET /explain's query and answer, the table `koordlet
// explain` prints) and the subcommand's query string.
#include <catch2/catch.hpp>

#include "agent/explain.h"
#include "agent/explain_command.h"

namespace test_agent_explain {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

std::string render(Knob k, const KnobValue& v) { return renderKnob(k, CgroupVersion::kV1, v); }

KnobRecord suppressed() {
  KnobRecord r;
  r.dir = "kubepods/besteffort/podb";
  r.knob = Knob::kCpusetCpus;
  r.owner = "cpu-suppress";
  r.asked = KnobValue::ofCpus({0, 1, 2});
  r.written = KnobValue::ofCpus({0, 1, 2});
  r.writtenAt = Clock::Wall(std::chrono::seconds(1'700'000'000));
  auto why = std::make_shared<WriteReason>();
  why->add("resourceUsedThresholdWithBE.cpuSuppressThresholdPercent", "65",
           "NodeSLO n1 resourceVersion 9");
  why->add("nodeUsedCores", "4.50");
  why->rule = "BE may use ...";
  r.why = why;
  return r;
}

}  // namespace

TEST_CASE("explain queries name a pod, a uid, a path or a knob, and bad ones say which parameter",
          "[explain]") {
  auto q = parseExplainQuery("pod=default%2Fweb&knob=cpu.cfs_quota_us");
  REQUIRE(q.ok());
  CHECK(q->pod == "default/web");
  CHECK(q->knob == Knob::kCpuQuota);
  q = parseExplainQuery("path=/kubepods/besteffort/&below=true");
  REQUIRE(q.ok());
  CHECK(q->path == "kubepods/besteffort");
  CHECK(q->below);
  q = parseExplainQuery("knob=cpu.max");  // the v2 name works too
  REQUIRE(q.ok());
  CHECK(q->knob == Knob::kCpuQuota);
  CHECK(q->below);
  q = parseExplainQuery("uid=1234");
  REQUIRE(q.ok());
  CHECK(q->uid == "1234");

  auto error = [](std::string_view text) {
    auto r = parseExplainQuery(text);
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(error("") == "explain: give pod=<namespace>/<name>, uid=, path= or knob=");
  CHECK(error("pod=web") == "explain: pod: expected <namespace>/<name>, got \"web\"");
  CHECK(error("pod=a/b&path=kubepods") == "explain: give one of pod, uid and path");
  CHECK(error("path=kubepods/../etc") ==
        "explain: path: \"kubepods/../etc\" has an empty, \".\" or \"..\" part");
  CHECK(error("knob=memory.stat") ==
        "explain: knob: \"memory.stat\" is not a file the agent manages");
  CHECK(error("pod=a%2") == "explain: pod: bad %-encoding");
  CHECK(error("colour=red") ==
        "explain: unknown parameter \"colour\" (pod, uid, path, below, knob)");
  CHECK(error("path=a&below=yes") == "explain: below: expected true or false, got \"yes\"");
}

TEST_CASE("the subcommand's query string decodes back to what it was given", "[explain]") {
  const std::string q =
      explainQueryString({{"pod", "kube-system/web 1&x=y"}, {"knob", "cpuset.cpus"}});
  CHECK(q == "pod=kube-system/web%201%26x%3Dy&knob=cpuset.cpus");
  auto parsed = parseExplainQuery(q);
  REQUIRE(parsed.ok());
  CHECK(parsed->pod == "kube-system/web 1&x=y");
}

TEST_CASE(
    "an explain answer holds owner, kernel, written, inputs with sources, drift and "
    "refusals",
    "[explain]") {
  ExplainQuery q;
  q.pod = "default/b";
  Pod pod;
  pod.ns = "default";
  pod.name = "b";
  pod.uid = "u1";
  pod.koordQos = KoordQos::kBE;
  pod.kubeQos = KubeQos::kBestEffort;
  pod.labels["koordinator.sh/qosClass"] = "BE";
  pod.labels["app"] = "batch";
  Container c;
  c.name = "main";
  c.requests.batchCpuMilli = 1000;
  pod.containers.push_back(c);

  ExplainEntry ok;
  ok.record = suppressed();
  ok.kernel = std::string("0-2");
  ok.file = "/sys/fs/cgroup/cpuset/kubepods/besteffort/podb/cpuset.cpus";
  ok.scope = "pod";
  ok.matches = true;
  ExplainEntry drifted;
  drifted.record = suppressed();
  drifted.record.knob = Knob::kCpuQuota;
  drifted.record.asked = KnobValue::of(200000);
  drifted.record.written = KnobValue::of(200000);
  drifted.record.drift = "-1";
  drifted.record.driftReplaced = "200000";
  drifted.record.driftAt = Clock::Wall(std::chrono::seconds(1'700'000'060));
  drifted.record.drifts = 2;
  drifted.record.refusal =
      KnobRefusal{"-5", "out_of_range", "cpu-suppress", "refusing ...", drifted.record.driftAt};
  drifted.kernel = makeError("no such file");
  drifted.scope = "pod";

  const nlohmann::json a = explainJson(q, &pod, {ok, drifted}, render);
  CHECK(a["query"] == nlohmann::json{{"pod", "default/b"}});
  CHECK(a["pod"]["qos"] == "BE");
  CHECK(a["pod"]["kubeQos"] == "BestEffort");
  CHECK(a["pod"]["koordinator"] == nlohmann::json{{"koordinator.sh/qosClass", "BE"}});
  CHECK(a["pod"]["containers"][0]["requests"]["kubernetes.io/batch-cpu"] == 1000);
  REQUIRE(a["knobs"].size() == 2);
  const nlohmann::json& k = a["knobs"][0];
  CHECK(k["path"] == ok.file);
  CHECK(k["knob"] == "cpuset.cpus");
  CHECK(k["owner"] == "cpu-suppress");
  CHECK(k["kernel"] == "0-2");
  CHECK(k["asked"] == "0-2");
  CHECK(k["written"] ==
        nlohmann::json{{"value", "0-2"}, {"at", "2023-11-14T22:13:20.000Z"}, {"dryRun", false}});
  CHECK(k["inputs"][0] ==
        nlohmann::json{{"name", "resourceUsedThresholdWithBE.cpuSuppressThresholdPercent"},
                       {"value", "65"},
                       {"source", "NodeSLO n1 resourceVersion 9"}});
  CHECK(k["inputs"][1] == nlohmann::json{{"name", "nodeUsedCores"}, {"value", "4.50"}});
  CHECK(k["drift"].is_null());
  CHECK(k["refused"].is_null());
  CHECK(k["matches"] == true);
  const nlohmann::json& d = a["knobs"][1];
  CHECK(d["kernel"].is_null());
  CHECK(d["kernelError"] == "no such file");
  CHECK(d["matches"].is_null());
  CHECK(d["drift"] == nlohmann::json{{"value", "-1"},
                                     {"replaced", "200000"},
                                     {"noticedAt", "2023-11-14T22:14:20.000Z"},
                                     {"times", 2}});
  CHECK(d["refused"]["reason"] == "out_of_range");
  CHECK(d["refused"]["value"] == "-5");

  const std::string table = explainTable(a);
  CHECK(table.find("pod default/b (uid u1): qos BE, kube BestEffort") != std::string::npos);
  CHECK(table.find("kubepods/besteffort/podb/cpuset.cpus  [pod]\n  owner    cpu-suppress\n"
                   "  kernel   0-2\n") != std::string::npos);
  CHECK(table.find("resourceUsedThresholdWithBE.cpuSuppressThresholdPercent = 65  (NodeSLO n1 "
                   "resourceVersion 9)") != std::string::npos);
  CHECK(table.find("drift    -1 found where we had 200000, noticed 2023-11-14T22:14:20.000Z (2 "
                   "times), repaired") != std::string::npos);
  CHECK(table.find("refused  -5 (out_of_range, asked by cpu-suppress") != std::string::npos);
}

TEST_CASE("an answer with no knob says so in the table", "[explain]") {
  ExplainQuery q;
  q.path = "kubepods/burstable";
  const nlohmann::json a = explainJson(q, nullptr, {}, render);
  CHECK(a["pod"].is_null());
  CHECK(a["knobs"].empty());
  CHECK(explainTable(a) == "no knob the agent manages here\n");
}

}  // namespace test_agent_explain
