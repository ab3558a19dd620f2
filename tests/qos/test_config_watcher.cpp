#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <string>

#include "base/log.h"
#include "qos/config_watcher.h"
#include "tests/support/log_capture.h"
#include "tests/support/temp_tree.h"

namespace test_qos_config_watcher {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

const std::string kGood =
    "resourceUsedThresholdWithBE: {enable: true, cpuSuppressThresholdPercent: 50}\n";
const std::string kGood2 =
    "resourceUsedThresholdWithBE: {enable: true, cpuSuppressThresholdPercent: 40}\n";
const std::string kBad = "resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: 150}\n";
const std::string kBad2 = "resourceUsedThresholdWithBE: {cpuSuppressPolicy: foo}\n";

// Captures the process log for the test's lifetime; the config file in a temp dir.
struct Harness : test::LogCapture {
  test::TempTree tree;
  std::string path() const { return tree.path("slo.yaml"); }
};

}  // namespace

TEST_CASE("without a file the watcher serves the defaults and never reloads", "[config_watcher]") {
  Harness h;
  ConfigWatcher w("", h.clock);
  CHECK(w.generation() == 0);  // nothing applied before load()
  REQUIRE(w.load().ok());
  CHECK_FALSE(w.poll());
  CHECK(w.generation() == 1);  // the defaults, in force from the start
  CHECK(w.reloadErrors() == 0);
  CHECK(w.current().effective == defaultNodeSlo().effective);
  json j = w.toJson();
  CHECK(j.at("file") == "");
  CHECK(j.at("generation") == 1);
  CHECK(j.at("loadedAt") == "2023-11-14T22:13:20Z");
  CHECK(j.at("lastError") == "");
  CHECK(j.at("source") == "defaults");
  CHECK(j.at("spec") == defaultNodeSlo().effective);
  CHECK(h.log.str().empty());
}

TEST_CASE("load accepts a good file and logs one line", "[config_watcher]") {
  Harness h;
  h.tree.write("slo.yaml", kGood);
  ConfigWatcher w(h.path(), h.clock);
  h.clock.advance(5s);
  REQUIRE(w.load().ok());
  CHECK(w.generation() == 1);
  CHECK(w.current().threshold.enable);
  CHECK(w.current().threshold.cpuSuppressThresholdPercent == 50);
  CHECK(w.lastError().empty());
  CHECK(w.loadedAt() == h.clock.wallNow());
  CHECK(w.fileName() == h.path());
  CHECK(h.lines('I') == 1);
  CHECK(h.log.str().find("config " + h.path() + " loaded (spec, generation 1)") !=
        std::string::npos);
}

TEST_CASE("load returns the file's error and changes nothing", "[config_watcher]") {
  Harness h;
  h.tree.write("slo.yaml", kBad);
  ConfigWatcher w(h.path(), h.clock);
  Status s = w.load();
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == h.path() +
                                 ": spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: "
                                 "150 is out of range 0..100");
  CHECK(w.generation() == 0);
  CHECK(w.current().effective == defaultNodeSlo().effective);

  ConfigWatcher missing(h.tree.path("nope.yaml"), h.clock);
  Status m = missing.load();
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().sysErrno == ENOENT);
  CHECK(m.error().message.find(h.tree.path("nope.yaml")) == 0);
}

TEST_CASE("poll reloads when the content changes, and only then", "[config_watcher]") {
  Harness h;
  h.tree.write("slo.yaml", kGood);
  ConfigWatcher w(h.path(), h.clock);
  REQUIRE(w.load().ok());
  CHECK_FALSE(w.poll());
  CHECK_FALSE(w.poll());
  CHECK(w.generation() == 1);

  h.clock.advance(10s);
  h.tree.write("slo.yaml", kGood2);
  CHECK(w.poll());
  CHECK(w.generation() == 2);
  CHECK(w.current().threshold.cpuSuppressThresholdPercent == 40);
  CHECK(w.loadedAt() == h.clock.wallNow());
  CHECK_FALSE(w.poll());

  // A content change that parses to the same spec is still a new generation.
  h.tree.write("slo.yaml", kGood2 + "# touched\n");
  CHECK(w.poll());
  CHECK(w.generation() == 3);
  CHECK(h.lines('I') == 3);
  CHECK(h.lines('W') == 0);
}

TEST_CASE("bad content keeps the last good config and is counted and logged once",
          "[config_watcher]") {
  Harness h;
  h.tree.write("slo.yaml", kGood);
  ConfigWatcher w(h.path(), h.clock);
  REQUIRE(w.load().ok());
  Clock::Wall goodAt = w.loadedAt();

  h.clock.advance(1s);
  h.tree.write("slo.yaml", kBad);
  CHECK_FALSE(w.poll());
  CHECK_FALSE(w.poll());
  CHECK_FALSE(w.poll());
  CHECK(w.reloadErrors() == 1);
  CHECK(w.generation() == 1);
  CHECK(w.current().threshold.cpuSuppressThresholdPercent == 50);
  CHECK(w.loadedAt() == goodAt);
  CHECK(w.lastError() ==
        h.path() +
            ": spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: 150 is out of "
            "range 0..100");
  CHECK(h.lines('W') == 1);
  CHECK(h.log.str().find("rejected, keeping generation 1: " + h.path()) != std::string::npos);
  CHECK(w.toJson().at("lastError") == w.lastError());
  CHECK(w.toJson().at("reloadErrors") == 1);

  // A different bad content is a new rejection.
  h.tree.write("slo.yaml", kBad2);
  CHECK_FALSE(w.poll());
  CHECK(w.reloadErrors() == 2);
  CHECK(h.lines('W') == 2);
  CHECK(w.lastError().find("unknown cpuSuppressPolicy \"foo\"") != std::string::npos);

  // Fixed: accepted, error cleared, one recovery line.
  h.clock.advance(1s);
  h.tree.write("slo.yaml", kGood2);
  CHECK(w.poll());
  CHECK(w.generation() == 2);
  CHECK(w.lastError().empty());
  CHECK(w.reloadErrors() == 2);
  CHECK(w.loadedAt() == h.clock.wallNow());
  CHECK(w.current().threshold.cpuSuppressThresholdPercent == 40);
  CHECK(h.log.str().find("fixed and reloaded (spec, generation 2)") != std::string::npos);
  CHECK(h.lines('W') == 2);
}

TEST_CASE("a rejected reload with several problems logs each on a line of its own",
          "[config_watcher]") {
  Harness h;
  h.tree.write("slo.yaml", kGood);
  ConfigWatcher w(h.path(), h.clock);
  REQUIRE(w.load().ok());
  h.tree.write("slo.yaml",
               "resourceUsedThresholdWithBE: {cpuSuppressThresholdPercent: 150, enable: 2}\n");
  CHECK_FALSE(w.poll());
  CHECK(w.reloadErrors() == 1);  // one bad version, whatever its number of problems
  CHECK(h.lines('W') == 2);
  const std::string log = h.log.str();
  CHECK(log.find("\\n") == std::string::npos);  // no escaped newline inside a line
  const std::string head = "] config " + h.path() + " rejected, keeping generation 1: " + h.path();
  CHECK(log.find(head + ": spec.resourceUsedThresholdWithBE.cpuSuppressThresholdPercent: 150 is "
                        "out of range 0..100\n") != std::string::npos);
  CHECK(log.find(head + ": spec.resourceUsedThresholdWithBE.enable: expected a boolean") !=
        std::string::npos);
}

TEST_CASE("a vanished file keeps the last good config and is logged once", "[config_watcher]") {
  Harness h;
  h.tree.write("slo.yaml", kGood);
  ConfigWatcher w(h.path(), h.clock);
  REQUIRE(w.load().ok());

  h.tree.remove("slo.yaml");
  CHECK_FALSE(w.poll());
  CHECK_FALSE(w.poll());
  CHECK(w.reloadErrors() == 1);
  CHECK(w.generation() == 1);
  CHECK(w.current().threshold.enable);
  CHECK(w.lastError().find(h.path()) == 0);
  CHECK(w.lastError().find("No such file") != std::string::npos);
  CHECK(h.lines('W') == 1);
  CHECK(h.log.str().find("cannot be read, keeping generation 1") != std::string::npos);

  // Back with the same content: the file is readable again, so it is taken again.
  h.tree.write("slo.yaml", kGood);
  CHECK(w.poll());
  CHECK(w.generation() == 2);
  CHECK(w.lastError().empty());
  CHECK_FALSE(w.poll());
}

TEST_CASE("an oversized file is refused as a reload error", "[config_watcher]") {
  Harness h;
  h.tree.write("slo.yaml", kGood);
  ConfigWatcher w(h.path(), h.clock);
  REQUIRE(w.load().ok());
  h.tree.write("slo.yaml", "extensions: {pad: \"" + std::string(kMaxSloConfigBytes, 'x') + "\"}\n");
  CHECK_FALSE(w.poll());
  CHECK_FALSE(w.poll());
  CHECK(w.reloadErrors() == 1);
  CHECK(w.lastError().find("larger than 1048576 bytes") != std::string::npos);
  CHECK(w.current().threshold.cpuSuppressThresholdPercent == 50);
}

TEST_CASE("a ConfigMap volume's symlink swap is seen by content", "[config_watcher]") {
  // kubelet's atomic writer: <dir>/slo.yaml -> ..data/slo.yaml, ..data -> ..<timestamp>/,
  // and an update renames a new ..data symlink over the old one.
  namespace fs = std::filesystem;
  Harness h;
  h.tree.write("..v1/slo.yaml", kGood);
  h.tree.write("..v2/slo.yaml", kGood2);
  fs::create_directory_symlink("..v1", h.tree.path("..data"));
  fs::create_symlink("..data/slo.yaml", h.path());
  ConfigWatcher w(h.path(), h.clock);
  REQUIRE(w.load().ok());
  CHECK(w.current().threshold.cpuSuppressThresholdPercent == 50);
  CHECK_FALSE(w.poll());

  fs::create_directory_symlink("..v2", h.tree.path("..data_tmp"));
  fs::rename(h.tree.path("..data_tmp"), h.tree.path("..data"));
  CHECK(w.poll());
  CHECK(w.current().threshold.cpuSuppressThresholdPercent == 40);
  CHECK(w.generation() == 2);
}

TEST_CASE("toJson shows file, generation, UTC load time, error, notes and the spec",
          "[config_watcher]") {
  Harness h;
  h.tree.write("slo.yaml",
               "kind: ConfigMap\n"
               "metadata: {name: slo-controller-config, namespace: koordinator-system}\n"
               "data:\n"
               "  colocation-config: '{\"enable\": true}'\n"
               "  cpu-burst-config: '{\"clusterStrategy\": {\"policy\": \"auto\"}}'\n");
  ConfigWatcher w(h.path(), h.clock);
  h.clock.advance(3661s + 500ms);
  REQUIRE(w.load().ok());
  json j = w.toJson();
  CHECK(j.at("file") == h.path());
  CHECK(j.at("generation") == 1);
  CHECK(j.at("loadedAt") == "2023-11-14T23:14:21Z");
  CHECK(j.at("lastError") == "");
  CHECK(j.at("reloadErrors") == 0);
  CHECK(j.at("source") == "ConfigMap koordinator-system/slo-controller-config");
  CHECK(j.at("notes") ==
        json{"data.colocation-config: read by koord-manager only, not by the node agent"});
  CHECK(j.at("spec").at("cpuBurstStrategy").at("policy") == "auto");
  CHECK(j.at("spec").at("cpuBurstStrategy").at("cpuBurstPercent") == 1000);
  CHECK(j.at("spec") == w.current().effective);
  // The notes are in the load line too, so the log says what is not applied.
  CHECK(h.log.str().find("; data.colocation-config: read by koord-manager only") !=
        std::string::npos);
}

}  // namespace test_qos_config_watcher
