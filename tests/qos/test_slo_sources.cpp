// Tests for qos/slo_sources: the cluster's NodeSLO against the --config file. The
// cluster's objects are the real ones of the rig's kube-apiserver 1.32
// (tests/fixtures/kube-api/nodeslo-list-by-name.body and the watch events of
// nodeslo-watch-bookmarks.raw: MODIFIED rv 236, DELETED rv 237, ADDED rv 238).
#include <catch2/catch.hpp>

#include <map>
#include <sstream>
#include <string>

#include "base/log.h"
#include "base/read_file.h"
#include "qos/slo_sources.h"
#include "qos/write_reasons.h"
#include "tests/support/log_capture.h"
#include "tests/support/temp_tree.h"

namespace test_qos_slo_sources {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

const std::string kFile50 =
    "resourceUsedThresholdWithBE: {enable: true, cpuSuppressThresholdPercent: 50}\n";
const std::string kFile40 =
    "resourceUsedThresholdWithBE: {enable: true, cpuSuppressThresholdPercent: 40}\n";

// The watch's events by type, each event's object (the stream's chunks hold one
// JSON event per line; the framing lines are skipped).
std::map<std::string, json> watchObjects() {
  auto raw = readFile(test::fixturePath("kube-api/nodeslo-watch-bookmarks.raw"));
  REQUIRE(raw.ok());
  std::map<std::string, json> out;
  std::istringstream in(*raw);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("{\"type\"", 0) != 0) continue;
    json event = json::parse(line);
    out[event.at("type").get<std::string>()] = event.at("object");
  }
  REQUIRE(out.count("MODIFIED") == 1);
  REQUIRE(out.count("DELETED") == 1);
  REQUIRE(out.count("ADDED") == 1);
  return out;
}

json listedObject() {
  auto body = readFile(test::fixturePath("kube-api/nodeslo-list-by-name.body"));
  REQUIRE(body.ok());
  json list = json::parse(*body);
  REQUIRE(list.at("items").size() == 1);
  return list.at("items")[0];
}

// A copy of obj with another resourceVersion and, when given, another
// cpuSuppressThresholdPercent.
json variant(json obj, const std::string& rv, std::optional<json> percent = std::nullopt) {
  obj["metadata"]["resourceVersion"] = rv;
  if (percent) obj["spec"]["resourceUsedThresholdWithBE"]["cpuSuppressThresholdPercent"] = *percent;
  return obj;
}

// Captures the process log for the test's lifetime; the --config file in a temp dir.
struct Harness : test::LogCapture {
  test::TempTree tree;
  std::string path() const { return tree.path("slo.yaml"); }
  void write(const std::string& text) const { tree.write("slo.yaml", text); }
};

int percent(const SloSources& s) { return s.current().threshold.cpuSuppressThresholdPercent; }

}  // namespace

TEST_CASE("the cluster's NodeSLO overrides the file once it is known", "[slo_sources]") {
  Harness h;
  h.write(kFile50);
  SloSources s(h.path(), "rig-node", false, h.clock);
  CHECK(s.generation() == 0);
  REQUIRE(s.load().ok());
  CHECK(s.generation() == 1);
  CHECK(s.active() == SloSources::Active::kFile);
  CHECK(s.source() == "file " + h.path());
  CHECK(percent(s) == 50);

  h.clock.advance(10s);
  REQUIRE(s.applyClusterObject(watchObjects().at("MODIFIED")).ok());
  CHECK(s.active() == SloSources::Active::kCluster);
  CHECK(s.generation() == 2);
  CHECK(percent(s) == 55);
  CHECK(s.current().threshold.enable);
  CHECK(s.source() == "cluster NodeSLO rig-node resourceVersion 236");

  // A new file content is taken by the file source but is not in force.
  h.write(kFile40);
  CHECK_FALSE(s.pollFile());
  CHECK(s.file().generation() == 2);
  CHECK(s.file().current().threshold.cpuSuppressThresholdPercent == 40);
  CHECK(s.generation() == 2);
  CHECK(percent(s) == 55);
}

TEST_CASE("a bad cluster object keeps the last good config and is counted and logged once",
          "[slo_sources]") {
  Harness h;
  h.write(kFile50);
  SloSources s(h.path(), "rig-node", false, h.clock);
  REQUIRE(s.load().ok());
  const json good = watchObjects().at("MODIFIED");

  SECTION("before any good object the file stays in force") {
    auto st = s.applyClusterObject(variant(good, "300", 150));
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.error().message,
               Catch::StartsWith("NodeSLO rig-node: "
                                 "spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: "));
    CHECK(s.active() == SloSources::Active::kFile);
    CHECK(percent(s) == 50);
    CHECK(s.generation() == 1);
    CHECK(s.clusterRejections() == 1);
    CHECK(s.lastError() == st.error().message);
    CHECK(s.toJson().at("cluster").at("resourceVersion") == "");
  }

  SECTION("after a good object its config stays, the error is shown until a good one comes") {
    REQUIRE(s.applyClusterObject(good).ok());
    REQUIRE(s.generation() == 2);
    const size_t warningsBefore = h.lines('W');

    const json bad = variant(good, "300", "lots");
    CHECK_FALSE(s.applyClusterObject(bad).ok());
    CHECK_FALSE(s.applyClusterObject(bad).ok());  // a re-list: the same object again
    CHECK(s.clusterRejections() == 1);
    CHECK(s.rejections() == 1);
    CHECK(h.lines('W') == warningsBefore + 1);
    CHECK(percent(s) == 55);
    CHECK(s.generation() == 2);
    CHECK(s.source() == "cluster NodeSLO rig-node resourceVersion 236");
    json j = s.toJson();
    CHECK_THAT(j.at("lastError").get<std::string>(),
               Catch::Contains("cpuSuppressThresholdPercent"));
    CHECK(j.at("cluster").at("rejections") == 1);
    CHECK(j.at("reloadErrors") == 1);

    // Another bad version counts again.
    CHECK_FALSE(s.applyClusterObject(variant(good, "301", 101)).ok());
    CHECK(s.clusterRejections() == 2);
    CHECK(h.lines('W') == warningsBefore + 2);

    REQUIRE(s.applyClusterObject(variant(good, "302", 45)).ok());
    CHECK(s.lastError() == "");
    CHECK(percent(s) == 45);
    CHECK(s.generation() == 3);
    CHECK(s.clusterRejections() == 2);
  }
}

TEST_CASE("an object that is not this node's NodeSLO is rejected naming the field",
          "[slo_sources]") {
  Harness h;
  SloSources s("", "rig-node", false, h.clock);
  REQUIRE(s.load().ok());
  json other = watchObjects().at("MODIFIED");
  other["metadata"]["name"] = "other-node";
  auto st = s.applyClusterObject(other);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message ==
        "NodeSLO other-node: metadata.name: expected \"rig-node\" (this node)");

  json wrongKind = watchObjects().at("MODIFIED");
  wrongKind["kind"] = "NodeMetric";
  auto kind = s.applyClusterObject(wrongKind);
  REQUIRE_FALSE(kind.ok());
  CHECK(kind.error().message == "NodeSLO rig-node: kind: expected \"NodeSLO\", got \"NodeMetric\"");

  json badSpec = watchObjects().at("MODIFIED");
  badSpec["spec"] = json::array();
  auto spec = s.applyClusterObject(badSpec);
  REQUIRE_FALSE(spec.ok());
  CHECK_THAT(spec.error().message, Catch::StartsWith("NodeSLO rig-node: spec: "));

  CHECK(s.clusterRejections() == 3);
  CHECK(s.active() == SloSources::Active::kDefaults);
  CHECK(s.source() == "defaults");
}

TEST_CASE("with --config-overrides-nodeslo the file wins over the cluster's object",
          "[slo_sources]") {
  Harness h;
  h.write(kFile50);
  SloSources s(h.path(), "rig-node", true, h.clock);
  REQUIRE(s.load().ok());
  REQUIRE(s.applyClusterObject(watchObjects().at("MODIFIED")).ok());
  CHECK(s.active() == SloSources::Active::kFile);
  CHECK(percent(s) == 50);
  CHECK(s.generation() == 1);
  CHECK(s.source() == "file " + h.path());
  json j = s.toJson();
  CHECK(j.at("configOverridesNodeSlo") == true);
  CHECK(j.at("cluster").at("resourceVersion") == "236");

  h.write(kFile40);
  CHECK(s.pollFile());
  CHECK(s.generation() == 2);
  CHECK(percent(s) == 40);

  // Without a file the flag changes nothing: the cluster's object is in force.
  SloSources noFile("", "rig-node", true, h.clock);
  REQUIRE(noFile.load().ok());
  REQUIRE(noFile.applyClusterObject(watchObjects().at("MODIFIED")).ok());
  CHECK(noFile.active() == SloSources::Active::kCluster);
  CHECK(percent(noFile) == 55);
}

TEST_CASE("a NodeSLO deleted in the cluster keeps its last config until a new one comes",
          "[slo_sources]") {
  Harness h;
  h.write(kFile50);
  SloSources s(h.path(), "rig-node", false, h.clock);
  REQUIRE(s.load().ok());
  auto events = watchObjects();
  REQUIRE(s.applyClusterObject(events.at("MODIFIED")).ok());
  REQUIRE(s.generation() == 2);

  s.clusterDeleted();
  CHECK(s.active() == SloSources::Active::kCluster);
  CHECK(percent(s) == 55);
  CHECK(s.generation() == 2);
  CHECK(s.source() ==
        "cluster NodeSLO rig-node resourceVersion 236 (deleted in the cluster, last config kept)");
  CHECK(s.toJson().at("cluster").at("deleted") == true);

  // Re-created with enable false: the new object is in force.
  REQUIRE(s.applyClusterObject(events.at("ADDED")).ok());
  CHECK_FALSE(s.current().threshold.enable);
  CHECK(percent(s) == 65);  // koordlet's default, merged under the object's spec
  CHECK(s.generation() == 3);
  CHECK(s.source() == "cluster NodeSLO rig-node resourceVersion 238");
  CHECK(s.toJson().at("cluster").at("deleted") == false);
}

TEST_CASE("the generation moves with the spec, not with a resourceVersion alone", "[slo_sources]") {
  Harness h;
  SloSources s("", "rig-node", false, h.clock);
  REQUIRE(s.load().ok());
  CHECK(s.generation() == 1);
  const json listed = listedObject();
  REQUIRE(s.applyClusterObject(listed).ok());
  CHECK(s.generation() == 2);  // defaults -> cluster, even with a spec equal to them
  CHECK(s.clusterResourceVersion() == "232");

  // The same object again (a re-list), then a label edit: same spec.
  REQUIRE(s.applyClusterObject(listed).ok());
  json labelled = variant(listed, "240");
  labelled["metadata"]["labels"] = {{"team", "a"}};
  REQUIRE(s.applyClusterObject(labelled).ok());
  CHECK(s.generation() == 2);
  CHECK(s.clusterResourceVersion() == "240");
  CHECK(s.source() == "cluster NodeSLO rig-node resourceVersion 240");

  REQUIRE(s.applyClusterObject(variant(listed, "241", 30)).ok());
  CHECK(s.generation() == 3);
  CHECK(percent(s) == 30);
}

TEST_CASE("/config shows the source, the generation and the file's and cluster's parts",
          "[slo_sources]") {
  Harness h;
  SloSources defaults("", "rig-node", false, h.clock);
  REQUIRE(defaults.load().ok());
  json d = defaults.toJson();
  for (const char* key :
       {"file", "generation", "loadedAt", "lastError", "reloadErrors", "source", "notes", "spec"}) {
    CHECK(d.contains(key));
  }
  CHECK(d.at("source") == "defaults");
  CHECK(d.at("file") == "");
  CHECK(d.at("generation") == 1);
  CHECK(d.at("loadedAt") == "2023-11-14T22:13:20Z");
  CHECK(d.at("cluster").is_null());
  CHECK(d.at("fileConfig").is_null());
  CHECK(d.at("spec") == defaultNodeSlo().effective);

  h.write(kFile50);
  SloSources s(h.path(), "rig-node", false, h.clock);
  REQUIRE(s.load().ok());
  json f = s.toJson();
  CHECK(f.at("source") == "file " + h.path());
  CHECK(f.at("fileConfig").at("file") == h.path());
  CHECK(f.at("fileConfig").at("source") == "spec");  // the file's form, as ConfigWatcher says
  CHECK(f.at("spec").at("resourceUsedThresholdWithBE").at("cpuSuppressThresholdPercent") == 50);

  h.clock.advance(60s);
  REQUIRE(s.applyClusterObject(watchObjects().at("MODIFIED")).ok());
  json c = s.toJson();
  CHECK(c.at("source") == "cluster NodeSLO rig-node resourceVersion 236");
  CHECK(c.at("generation") == 2);
  CHECK(c.at("loadedAt") == "2023-11-14T22:14:20Z");
  CHECK(c.at("cluster").at("node") == "rig-node");
  CHECK(c.at("cluster").at("appliedAt") == "2023-11-14T22:14:20Z");
  CHECK(c.at("cluster").at("lastError") == "");
  CHECK(c.at("spec").at("resourceUsedThresholdWithBE").at("cpuSuppressThresholdPercent") == 55);
  // The file's part is still there, as it would apply without the cluster.
  CHECK(c.at("fileConfig")
            .at("spec")
            .at("resourceUsedThresholdWithBE")
            .at("cpuSuppressThresholdPercent") == 50);
}

TEST_CASE("a bad file is counted and shown even while the cluster's object is in force",
          "[slo_sources]") {
  Harness h;
  h.write("resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: 150}\n");
  SloSources bad(h.path(), "rig-node", false, h.clock);
  auto st = bad.load();
  REQUIRE_FALSE(st.ok());  // the start's error, for the agent to exit on
  CHECK_THAT(st.error().message, Catch::StartsWith(h.path() + ": "));

  h.write(kFile50);
  SloSources s(h.path(), "rig-node", false, h.clock);
  REQUIRE(s.load().ok());
  REQUIRE(s.applyClusterObject(watchObjects().at("MODIFIED")).ok());
  h.write("resourceUsedThresholdWithBE: {cpuSuppressPolicy: foo}\n");
  CHECK_FALSE(s.pollFile());
  CHECK(s.file().reloadErrors() == 1);
  CHECK(s.rejections() == 1);
  CHECK(s.clusterRejections() == 0);
  CHECK_THAT(s.lastError(), Catch::Contains("cpuSuppressPolicy"));
  CHECK(s.generation() == 2);
  CHECK(percent(s) == 55);
  json j = s.toJson();
  CHECK(j.at("reloadErrors") == 1);
  CHECK_THAT(j.at("fileConfig").at("lastError").get<std::string>(),
             Catch::Contains("cpuSuppressPolicy"));
}

TEST_CASE(
    "each spec field says where it came from: the NodeSLO's resourceVersion, the file, "
    "or koordlet's default",
    "[slo_sources][explain]") {
  Harness h;
  h.write(kFile50);
  SloSources s(h.path(), "rig-node", false, h.clock);
  REQUIRE(s.load().ok());
  constexpr const char* kThreshold = "resourceUsedThresholdWithBE.cpuSuppressThresholdPercent";
  constexpr const char* kPolicy = "resourceUsedThresholdWithBE.cpuSuppressPolicy";
  CHECK(sloFieldSource(s.current(), kThreshold) == "file " + h.path());
  CHECK(sloFieldSource(s.current(), kPolicy) == "default");
  const WriteInput in = sloInput(s.current(), kThreshold);
  CHECK(in.name == kThreshold);
  CHECK(in.value == "50");

  REQUIRE(s.applyClusterObject(watchObjects().at("MODIFIED")).ok());
  CHECK(sloFieldSource(s.current(), kThreshold) == "NodeSLO rig-node resourceVersion 236");
  CHECK(sloInput(s.current(), kThreshold).value == "55");
  // A new resourceVersion with the same spec: the source follows it.
  json again = watchObjects().at("MODIFIED");
  again["metadata"]["resourceVersion"] = "240";
  REQUIRE(s.applyClusterObject(again).ok());
  CHECK(sloFieldSource(s.current(), kThreshold) == "NodeSLO rig-node resourceVersion 240");
  CHECK(sloFieldSource(s.current(), "no.such.field") == "default");
}

}  // namespace test_qos_slo_sources
