#include <sys/stat.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/time_format.h"
#include "prediction/checkpoint.h"
#include "support/temp_tree.h"

namespace test_prediction_checkpoint {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::prediction;
using namespace std::chrono;

namespace {

const Clock::Wall kT0 = Clock::Wall(duration_cast<Clock::Wall::duration>(seconds(1795564800)));

ModelCheckpoint sample(const std::string& uid) {
  DecayingHistogram cpu(HistogramOptions::cpu(), hours(12));
  DecayingHistogram mem(HistogramOptions::memory(), hours(24));
  cpu.addSample(1.5, 1, kT0);
  mem.addSample(3e8, 1, kT0);
  return {uid, cpu.save(), mem.save(), kT0 + minutes(3)};
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kUid = "0f4d6c1e-3b1a-4a54-8f31-2b9a0c7d8e11";

}  // namespace

TEST_CASE("a checkpoint round trips through its file, and no temporary file is left") {
  test::TempTree dir;
  CheckpointDir d(dir.path());
  REQUIRE(d.save(sample(kUid)).ok());
  REQUIRE(d.save(sample("__node-koord-prod__")).ok());
  CHECK_FALSE(std::filesystem::exists(dir.path(std::string(kUid) + ".tmp")));
  struct stat st {};
  REQUIRE(::stat(dir.path(kUid).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  const std::string text = slurp(dir.path(kUid));
  CHECK(text.rfind("{\"UID\":\"0f4d6c1e", 0) == 0);
  CHECK(text.back() == '\n');

  auto r = d.restore([](std::string_view) { return true; });
  REQUIRE(r.ok());
  REQUIRE(r->models.size() == 2);
  CHECK(r->skipped.empty());
  for (const auto& m : r->models) {
    const auto want = sample(m.uid);
    CHECK(m.cpu == want.cpu);
    CHECK(m.memory == want.memory);
    CHECK(m.lastUpdated == want.lastUpdated);
  }
}

TEST_CASE(
    "restore deletes our leftovers, corrupt files and gone pods, and leaves foreign files alone") {
  test::TempTree dir;
  CheckpointDir d(dir.path());
  REQUIRE(d.save(sample(kUid)).ok());
  REQUIRE(d.save(sample("__node__")).ok());
  REQUIRE(d.save(sample("11111111-2222-3333-4444-555555555555")).ok());  // pod gone
  dir.write("__node-sys__.tmp", "{\"UID\":");                            // a save cut short
  dir.write("__node-koord-mid__", "{\"UID\":\"x\",\"CPU\":{\"bucketWeights\":{\"a\":1}}}");
  dir.write("__node-koord-batch__", "not json");
  dir.write("README.txt", "the operator's notes");
  dir.write("notes.tmp", "the operator's draft");
  dir.write("sub/__node__", "{}");

  auto r =
      d.restore([](std::string_view uid) { return uid != "11111111-2222-3333-4444-555555555555"; });
  REQUIRE(r.ok());
  REQUIRE(r->models.size() == 2);  // kUid and __node__
  for (const char* gone : {"__node-sys__.tmp", "__node-koord-mid__", "__node-koord-batch__",
                           "11111111-2222-3333-4444-555555555555"}) {
    INFO(gone);
    CHECK_FALSE(std::filesystem::exists(dir.path(gone)));
  }
  for (const char* kept : {"README.txt", "notes.tmp", "sub/__node__", kUid}) {
    INFO(kept);
    CHECK(std::filesystem::exists(dir.path(kept)));
  }
  std::string all;
  for (const auto& s : r->skipped) all += s + "\n";
  INFO(all);
  CHECK(
      all.find("__node-koord-mid__: CPU.bucketWeights: key \"a\" is not a bucket index: deleted") !=
      std::string::npos);
  CHECK(all.find("__node-koord-batch__: not JSON: deleted") != std::string::npos);
  CHECK(all.find("\"README.txt\": not a model id, left alone") != std::string::npos);
  CHECK(all.find("\"notes.tmp\": not ours, left alone") != std::string::npos);
  CHECK(r->skipped.size() == 4);
}

TEST_CASE("an oversized checkpoint is deleted unread") {
  test::TempTree dir;
  dir.write("__node__", std::string(CheckpointDir::kMaxFileBytes + 1, ' '));
  auto r = CheckpointDir(dir.path()).restore([](std::string_view) { return true; });
  REQUIRE(r.ok());
  CHECK(r->models.empty());
  REQUIRE(r->skipped.size() == 1);
  CHECK(r->skipped[0] == "__node__: 65537 bytes, over 65536: deleted");
}

TEST_CASE("a missing directory is an error naming it, and saves into it fail the same way") {
  CheckpointDir d("/nonexistent-koordlet-checkpoints");
  auto r = d.restore([](std::string_view) { return true; });
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "/nonexistent-koordlet-checkpoints: No such file or directory");
  CHECK_FALSE(d.save(sample("__node__")).ok());
  CHECK(d.remove("__node__").ok());  // nothing to remove is fine
}

TEST_CASE("model ids never name a path outside the directory") {
  CHECK(isModelId(kUid));
  CHECK(isModelId("__node__"));
  CHECK(isModelId("__node-__"));
  CHECK(isModelId("__node-koord-prod__"));
  CHECK(isModelId("5e8f2f0f5e2f3d6c9c6a1d2b3c4d5e6f"));  // a static pod's hash uid
  CHECK_FALSE(isModelId("../etc/passwd"));
  CHECK_FALSE(isModelId("a/b"));
  CHECK_FALSE(isModelId(""));
  CHECK_FALSE(isModelId("UPPER"));
  CHECK_FALSE(isModelId("notes"));
  CHECK_FALSE(isModelId("0f4d6c1e-3b1a-4a54-8f31-2b9a0c7d8e1"));  // 31 digits
  CHECK_FALSE(isModelId("__node-../__"));
  CheckpointDir d("/tmp");
  CHECK_FALSE(d.save(sample("../x")).ok());
  CHECK_FALSE(d.remove("../x").ok());
}

TEST_CASE("decoding names the field at fault") {
  auto err = [](std::string_view text) {
    auto r = decodeCheckpoint(text, "f");
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK(err("[]") == "f: expected a JSON object");
  CHECK(err("{\"CPU\":{}}") == "f: Memory: missing");
  CHECK(err("{\"CPU\":{\"totalWeight\":-1},\"Memory\":{}}") ==
        "f: CPU.totalWeight: must be a finite number >= 0, got -1");
  CHECK(err("{\"CPU\":{},\"Memory\":{\"bucketWeights\":{\"3\":-2}}}") ==
        "f: Memory.bucketWeights.3: expected a uint32, got -2");
  CHECK(err("{\"CPU\":{\"referenceTimestamp\":\"yesterday\"},\"Memory\":{}}")
            .find("f: CPU.referenceTimestamp: time \"yesterday\"") == 0);
  CHECK(err("{\"CPU\":{},\"Memory\":{}}") == "f: LastUpdated: missing");
}

}  // namespace test_prediction_checkpoint
