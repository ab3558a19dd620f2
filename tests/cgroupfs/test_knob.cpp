// Tests for cgroupfs/knob: the v1/v2 table, clamping, rendering, parsing of real
// file texts (captures under tests/fixtures/cgroup) and the support probe on
// throw-away trees shaped like a 5.14+ kernel and a 4.19 one.
#include <catch2/catch.hpp>
#include <string_view>

#include <string>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/knob.h"
#include "tests/support/temp_tree.h"

namespace test_cgroupfs_knob {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

constexpr CgroupVersion kV1 = CgroupVersion::kV1;
constexpr CgroupVersion kV2 = CgroupVersion::kV2;

std::string fixture(const std::string& rel) {
  auto text = readFile(test::fixturePath(rel));
  REQUIRE(text.ok());
  return *text;
}

int64_t parsedNumber(Knob knob, CgroupVersion version, std::string_view text) {
  auto v = parseKnob(knob, version, text);
  INFO(text);
  REQUIRE(v.ok());
  return v->number;
}

const std::string kEksContainer =
    "v1/elastic-amzn2-eks-node/sys/fs/cgroup/{}/kubepods.slice/kubepods-burstable.slice/"
    "kubepods-burstable-pod7a96c459_d529_44ae_9f99_90d3798d6426.slice/"
    "cri-containerd-1d3d308a7d48a27814a68bf33a44acf4441c9c02463ca0bc1cdfdc8c0b4a8496.scope/";

std::string eksFile(const std::string& controller, const std::string& file) {
  std::string path = kEksContainer;
  path.replace(path.find("{}"), 2, controller);
  return "cgroup/" + path + file;
}

}  // namespace

TEST_CASE("the knob table names the v1 and v2 files of every knob", "[knob]") {
  CHECK(std::string(knobSpec(Knob::kCpuShares).v1File) == "cpu.shares");
  CHECK(std::string(knobSpec(Knob::kCpuShares).v2File) == "cpu.weight");
  CHECK(std::string(knobSpec(Knob::kCpuQuota).v1File) == "cpu.cfs_quota_us");
  CHECK(std::string(knobSpec(Knob::kCpuQuota).v2File) == "cpu.max");
  CHECK(std::string(knobSpec(Knob::kCpuBurst).v1File) == "cpu.cfs_burst_us");
  CHECK(std::string(knobSpec(Knob::kCpuBurst).v2File) == "cpu.max.burst");
  CHECK(std::string(knobSpec(Knob::kCpusetCpus).v1Subsystem) == "cpuset");
  CHECK(std::string(knobSpec(Knob::kMemoryLimit).v1File) == "memory.limit_in_bytes");
  CHECK(std::string(knobSpec(Knob::kMemoryLimit).v2File) == "memory.max");
  CHECK(std::string(knobSpec(Knob::kMemoryHigh).v2File) == "memory.high");
  for (size_t i = 0; i < kKnobCount; ++i) {
    CHECK(static_cast<size_t>(knobSpec(static_cast<Knob>(i)).knob) == i);
  }
  CHECK(knobSpec(Knob::kCpuQuota).hierarchical);
  CHECK(knobSpec(Knob::kCpusetCpus).hierarchical);
  CHECK_FALSE(knobSpec(Knob::kCpuShares).hierarchical);
}

TEST_CASE("a number outside the range the kernel accepts is refused, not clamped", "[knob]") {
  CHECK(checkKnobRange(Knob::kCpuShares, KnobValue::of(2)).ok());
  CHECK(checkKnobRange(Knob::kCpuShares, KnobValue::of(262144)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kCpuShares, KnobValue::of(0)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kCpuShares, KnobValue::of(1'000'000)).ok());
  CHECK(checkKnobRange(Knob::kCpuQuota, KnobValue::of(-1)).ok());  // unlimited
  CHECK(checkKnobRange(Knob::kCpuQuota, KnobValue::of(1000)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kCpuQuota, KnobValue::of(500)).ok());
  // A negative quota used to become 1000 µs, the harshest throttle.
  CHECK_FALSE(checkKnobRange(Knob::kCpuQuota, KnobValue::of(-5)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kCpuQuota, KnobValue::of(int64_t{1} << 50)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kCpuBurst, KnobValue::of(-1)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kCpuBurst, KnobValue::of(200'000'000)).ok());
  CHECK(checkKnobRange(Knob::kMemoryLimit, KnobValue::of(-1)).ok());
  // A negative memory limit used to become 0: on v2, memory.max 0 kills the cgroup.
  const Status negative = checkKnobRange(Knob::kMemoryLimit, KnobValue::of(-7));
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error().message ==
        "memory.limit_in_bytes -7 is outside its range [0, 9223372036854775807] (or -1, "
        "unlimited)");
  CHECK_FALSE(checkKnobRange(Knob::kMemoryMin, KnobValue::of(-1)).ok());
  CHECK(checkKnobRange(Knob::kMemoryHigh, KnobValue::of(-1)).ok());
  const KnobValue cpus = KnobValue::ofCpus({3, 1, 1, 2});
  CHECK(cpus.cpus == std::vector<int>{1, 2, 3});
  CHECK(checkKnobRange(Knob::kCpusetCpus, cpus).ok());
}

TEST_CASE("shares become a cpu.weight on v2 by koordlet's formula", "[knob]") {
  CHECK(renderKnob(Knob::kCpuShares, kV1, KnobValue::of(1024)) == "1024");
  CHECK(renderKnob(Knob::kCpuShares, kV2, KnobValue::of(2)) == "1");
  CHECK(renderKnob(Knob::kCpuShares, kV2, KnobValue::of(262144)) == "10000");
  // 1 + (1024 - 2) * 9999 / 262142 = 39
  CHECK(renderKnob(Knob::kCpuShares, kV2, KnobValue::of(1024)) == "39");
  // Reading a weight back gives shares that render to the same weight.
  for (int64_t s : {2, 100, 1024, 5000, 262144}) {
    const std::string w = renderKnob(Knob::kCpuShares, kV2, KnobValue::of(s));
    const int64_t back = parsedNumber(Knob::kCpuShares, kV2, w + "\n");
    CHECK(renderKnob(Knob::kCpuShares, kV2, KnobValue::of(back)) == w);
  }
}

TEST_CASE("unlimited renders as -1 on v1 and max on v2", "[knob]") {
  CHECK(renderKnob(Knob::kCpuQuota, kV1, KnobValue::of(-1)) == "-1");
  CHECK(renderKnob(Knob::kCpuQuota, kV2, KnobValue::of(-1)) == "max");
  CHECK(renderKnob(Knob::kCpuQuota, kV1, KnobValue::of(50000)) == "50000");
  // cpu.max gets the quota alone: the kernel keeps the period.
  CHECK(renderKnob(Knob::kCpuQuota, kV2, KnobValue::of(50000)) == "50000");
  CHECK(renderKnob(Knob::kMemoryLimit, kV1, KnobValue::of(-1)) == "-1");
  CHECK(renderKnob(Knob::kMemoryLimit, kV2, KnobValue::of(-1)) == "max");
  CHECK(renderKnob(Knob::kMemoryLimit, kV2, KnobValue::of(1 << 20)) == "1048576");
  CHECK(renderKnob(Knob::kMemoryHigh, kV2, KnobValue::of(-1)) == "max");
  CHECK(renderKnob(Knob::kMemoryMin, kV2, KnobValue::of(4096)) == "4096");
  CHECK(renderKnob(Knob::kCpuBurst, kV2, KnobValue::of(0)) == "0");
}

TEST_CASE("cpu lists render as the kernel prints them", "[knob]") {
  CHECK(renderKnob(Knob::kCpusetCpus, kV1, KnobValue::ofCpus({0, 1, 2, 3})) == "0-3");
  CHECK(renderKnob(Knob::kCpusetCpus, kV1, KnobValue::ofCpus({0, 2, 3, 4, 8, 10, 11})) ==
        "0,2-4,8,10-11");
  CHECK(renderKnob(Knob::kCpusetCpus, kV2, KnobValue::ofCpus({5})) == "5");
  CHECK(renderKnob(Knob::kCpusetCpus, kV1, KnobValue::ofCpus({})).empty());
}

TEST_CASE("parsing compares values, not spellings", "[knob]") {
  CHECK(parsedNumber(Knob::kCpuQuota, kV1, "-1\n") == -1);
  CHECK(parsedNumber(Knob::kCpuQuota, kV1, "150000\n") == 150000);
  CHECK(parsedNumber(Knob::kCpuQuota, kV2, "max 100000\n") == -1);
  CHECK(parsedNumber(Knob::kCpuQuota, kV2, "50000 100000\n") == 50000);
  CHECK(parsedNumber(Knob::kMemoryLimit, kV1, "9223372036854771712\n") == -1);
  CHECK(parsedNumber(Knob::kMemoryLimit, kV1, "4611686018427387904\n") == -1);  // 2^62
  CHECK(parsedNumber(Knob::kMemoryLimit, kV1, "4611686018427387903\n") == 4611686018427387903);
  CHECK(parsedNumber(Knob::kMemoryLimit, kV2, "max\n") == -1);
  CHECK(parsedNumber(Knob::kMemoryLimit, kV2, "1073741824\n") == 1073741824);
  CHECK(parsedNumber(Knob::kMemoryHigh, kV2, "max\n") == -1);
  CHECK(parsedNumber(Knob::kMemoryLow, kV2, "0\n") == 0);
  CHECK(parsedNumber(Knob::kMemoryMin, kV2, "max\n") == knobSpec(Knob::kMemoryMin).max);
  CHECK(parsedNumber(Knob::kCpuBurst, kV1, "0\n") == 0);
  CHECK(parsedNumber(Knob::kCpuShares, kV1, "1024\n") == 1024);
  auto cpus = parseKnob(Knob::kCpusetCpus, kV1, "0-1,3\n");
  REQUIRE(cpus.ok());
  CHECK(*cpus == KnobValue::ofCpus({0, 1, 3}));
  CHECK(*cpus == *parseKnob(Knob::kCpusetCpus, kV1, "0,1,3\n"));
}

TEST_CASE("garbage and truncated files are errors, not values", "[knob]") {
  CHECK_FALSE(parseKnob(Knob::kCpuQuota, kV1, "").ok());
  CHECK_FALSE(parseKnob(Knob::kCpuQuota, kV1, "abc\n").ok());
  CHECK_FALSE(parseKnob(Knob::kCpuQuota, kV2, "asdf 100000\n").ok());
  CHECK_FALSE(parseKnob(Knob::kMemoryLimit, kV2, "max").ok());
  CHECK_FALSE(parseKnob(Knob::kCpusetCpus, kV1, "3-1\n").ok());
  CHECK_FALSE(parseKnob(Knob::kCpuShares, kV1, "1024 7\n").ok());
}

TEST_CASE("real cgroup files parse into v1 units", "[knob][fixtures]") {
  CHECK(parsedNumber(Knob::kCpuQuota, kV1, fixture(eksFile("cpu,cpuacct", "cpu.cfs_quota_us"))) ==
        -1);
  auto cpus = parseKnob(Knob::kCpusetCpus, kV1, fixture(eksFile("cpuset", "cpuset.cpus")));
  REQUIRE(cpus.ok());
  CHECK(*cpus == KnobValue::ofCpus({0, 1, 2, 3, 4, 5, 6, 7}));
  CHECK(parsedNumber(Knob::kCpuQuota, kV1,
                     fixture("cgroup/quota-edge-cases/automaxprocs/cpu/cpu.cfs_quota_us")) ==
        600000);
  CHECK(parsedNumber(Knob::kCpuQuota, kV2, fixture("cgroup/v2/telegraf/cpu.max")) == 4800000);
  CHECK(parsedNumber(Knob::kCpuQuota, kV2,
                     fixture("cgroup/v2/elastic-session-scope/sys/fs/cgroup/user.slice/"
                             "user-1000.slice/session-520.scope/cpu.max")) == -1);
  auto empty = parseKnob(Knob::kCpusetCpus, kV2, fixture("cgroup/v2/telegraf/cpuset.cpus"));
  REQUIRE(empty.ok());
  CHECK(empty->cpus.empty());
  CHECK_FALSE(parseKnob(Knob::kCpuQuota, kV1,
                        fixture("cgroup/quota-edge-cases/automaxprocs/invalid/cpu.cfs_quota_us"))
                  .ok());
}

TEST_CASE("the probe finds burst and memory protection only where the kernel has them",
          "[knob][probe]") {
  const CgroupLayout layout(kV1, CgroupDriver::kCgroupfs);
  SECTION("a 5.14+ v1 tree has cpu.cfs_burst_us") {
    test::TempTree tree({{"cpu/kubepods/cpu.shares", "1024\n"},
                         {"cpu/kubepods/cpu.cfs_quota_us", "-1\n"},
                         {"cpu/kubepods/cpu.cfs_burst_us", "0\n"},
                         {"cpuset/kubepods/cpuset.cpus", "0-3\n"},
                         {"memory/kubepods/memory.limit_in_bytes", "9223372036854771712\n"}});
    const KnobSupport s = KnobSupport::probe(tree.path(), layout);
    CHECK(s.has(Knob::kCpuShares));
    CHECK(s.has(Knob::kCpuQuota));
    CHECK(s.has(Knob::kCpuBurst));
    CHECK(s.has(Knob::kCpusetCpus));
    CHECK(s.has(Knob::kMemoryLimit));
    CHECK_FALSE(s.has(Knob::kMemoryMin));
    CHECK_FALSE(s.has(Knob::kMemoryHigh));
  }
  SECTION("a 4.19-like v1 tree lacks burst and memory.min") {
    test::TempTree tree({{"cpu/kubepods/cpu.shares", "1024\n"},
                         {"cpu/kubepods/cpu.cfs_quota_us", "-1\n"},
                         {"memory/kubepods/memory.limit_in_bytes", "9223372036854771712\n"}});
    const KnobSupport s = KnobSupport::probe(tree.path(), layout);
    CHECK(s.has(Knob::kCpuQuota));
    CHECK_FALSE(s.has(Knob::kCpuBurst));
    CHECK_FALSE(s.has(Knob::kMemoryMin));
    CHECK_FALSE(s.has(Knob::kCpusetCpus));
  }
  SECTION("an Anolis v1 tree has memory.min/low/high") {
    test::TempTree tree({{"memory/kubepods/memory.min", "0\n"},
                         {"memory/kubepods/memory.low", "0\n"},
                         {"memory/kubepods/memory.high", "max\n"}});
    const KnobSupport s = KnobSupport::probe(tree.path(), layout);
    CHECK(s.has(Knob::kMemoryMin));
    CHECK(s.has(Knob::kMemoryLow));
    CHECK(s.has(Knob::kMemoryHigh));
  }
  SECTION("a v2 tree with a prefix probes the v2 names under the kubepods root") {
    const CgroupLayout v2(kV2, CgroupDriver::kSystemd, "test");
    test::TempTree tree({{"test/kubepods.slice/cpu.weight", "100\n"},
                         {"test/kubepods.slice/cpu.max", "max 100000\n"},
                         {"test/kubepods.slice/memory.min", "0\n"},
                         {"cpu.max.burst", "0\n"}});  // at the root only: not ours
    const KnobSupport s = KnobSupport::probe(tree.path(), v2);
    CHECK(s.has(Knob::kCpuShares));
    CHECK(s.has(Knob::kCpuQuota));
    CHECK(s.has(Knob::kMemoryMin));
    CHECK_FALSE(s.has(Knob::kCpuBurst));
    CHECK_FALSE(s.has(Knob::kMemoryLimit));
  }
  const KnobSupport all = KnobSupport::all();
  for (size_t i = 0; i < kKnobCount; ++i) CHECK(all.has(static_cast<Knob>(i)));
}

// ---- Alinux memory extensions, oom.group, v1 soft limit ------------------------------

TEST_CASE("the Alinux memory knobs, oom.group and the v1 soft limit carry their files", "[knob]") {
  struct Row {
    Knob knob;
    const char* file;
    int64_t min;
    int64_t max;
  };
  for (const Row& r : {Row{Knob::kMemoryWmarkRatio, "memory.wmark_ratio", 0, 100},
                       Row{Knob::kMemoryWmarkScaleFactor, "memory.wmark_scale_factor", 1, 1000},
                       Row{Knob::kMemoryWmarkMinAdj, "memory.wmark_min_adj", -25, 50},
                       Row{Knob::kMemoryPriority, "memory.priority", 0, 12},
                       Row{Knob::kMemoryUsePriorityOom, "memory.use_priority_oom", 0, 1},
                       Row{Knob::kMemoryOomGroup, "memory.oom.group", 0, 1}}) {
    const KnobSpec& s = knobSpec(r.knob);
    INFO(r.file);
    CHECK(std::string(s.name) == r.file);
    CHECK(std::string(s.v1Subsystem) == "memory");
    CHECK(std::string(s.v1File) == r.file);
    CHECK(std::string(s.v2File) == r.file);
    CHECK(s.min == r.min);
    CHECK(s.max == r.max);
    CHECK_FALSE(s.hierarchical);
    CHECK_FALSE(s.minusOneIsUnlimited);
  }
  const KnobSpec& soft = knobSpec(Knob::kMemorySoftLimit);
  CHECK(std::string(soft.v1File) == "memory.soft_limit_in_bytes");
  CHECK(soft.v2File == nullptr);
  CHECK(soft.minusOneIsUnlimited);
  CHECK_FALSE(soft.hierarchical);
}

TEST_CASE("the new memory knobs check their ranges, a negative wmark_min_adj included", "[knob]") {
  CHECK(checkKnobRange(Knob::kMemoryWmarkMinAdj, KnobValue::of(-25)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kMemoryWmarkMinAdj, KnobValue::of(-40)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kMemoryWmarkMinAdj, KnobValue::of(80)).ok());
  // -1 is not "unlimited" for a ratio: it is out of range like any other number.
  CHECK_FALSE(checkKnobRange(Knob::kMemoryWmarkRatio, KnobValue::of(-1)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kMemoryWmarkRatio, KnobValue::of(101)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kMemoryWmarkScaleFactor, KnobValue::of(0)).ok());
  CHECK(checkKnobRange(Knob::kMemoryWmarkScaleFactor, KnobValue::of(1000)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kMemoryPriority, KnobValue::of(13)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kMemoryUsePriorityOom, KnobValue::of(2)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kMemoryOomGroup, KnobValue::of(-1)).ok());
  CHECK(checkKnobRange(Knob::kMemorySoftLimit, KnobValue::of(-1)).ok());
  CHECK_FALSE(checkKnobRange(Knob::kMemorySoftLimit, KnobValue::of(-9)).ok());
}

TEST_CASE("the new memory knobs render and parse as plain numbers, soft limit -1 as -1", "[knob]") {
  CHECK(renderKnob(Knob::kMemoryWmarkMinAdj, kV1, KnobValue::of(-25)) == "-25");
  CHECK(renderKnob(Knob::kMemoryWmarkMinAdj, kV2, KnobValue::of(50)) == "50");
  CHECK(renderKnob(Knob::kMemoryWmarkRatio, kV2, KnobValue::of(95)) == "95");
  CHECK(renderKnob(Knob::kMemoryPriority, kV1, KnobValue::of(12)) == "12");
  CHECK(renderKnob(Knob::kMemoryOomGroup, kV2, KnobValue::of(1)) == "1");
  CHECK(renderKnob(Knob::kMemorySoftLimit, kV1, KnobValue::of(-1)) == "-1");
  CHECK(renderKnob(Knob::kMemorySoftLimit, kV1, KnobValue::of(1 << 20)) == "1048576");
  CHECK(parsedNumber(Knob::kMemoryWmarkMinAdj, kV1, "-25\n") == -25);
  CHECK(parsedNumber(Knob::kMemoryWmarkScaleFactor, kV2, "20\n") == 20);
  CHECK(parsedNumber(Knob::kMemoryOomGroup, kV2, "0\n") == 0);
  CHECK(parsedNumber(Knob::kMemoryPriority, kV1, "7\n") == 7);
  // What vanilla v1 shows for an unlimited soft limit (LONG_MAX rounded to a page).
  CHECK(parsedNumber(Knob::kMemorySoftLimit, kV1, "9223372036854771712\n") == -1);
  CHECK(parsedNumber(Knob::kMemorySoftLimit, kV1, "268435456\n") == 268435456);
  CHECK_FALSE(parseKnob(Knob::kMemoryPriority, kV1, "high\n").ok());
}

TEST_CASE("the probe reports each Alinux knob, oom.group and the soft limit by its file",
          "[knob][probe]") {
  SECTION("a vanilla v1 memory hierarchy has the soft limit and nothing else new") {
    const CgroupLayout layout(kV1, CgroupDriver::kCgroupfs);
    test::TempTree tree({{"memory/kubepods/memory.limit_in_bytes", "9223372036854771712\n"},
                         {"memory/kubepods/memory.soft_limit_in_bytes", "9223372036854771712\n"},
                         // elsewhere than the kubepods root: not counted
                         {"memory/memory.oom.group", "0\n"},
                         {"cpu/kubepods/memory.priority", "0\n"}});
    const KnobSupport s = KnobSupport::probe(tree.path(), layout);
    CHECK(s.has(Knob::kMemorySoftLimit));
    for (Knob k : {Knob::kMemoryWmarkRatio, Knob::kMemoryWmarkScaleFactor, Knob::kMemoryWmarkMinAdj,
                   Knob::kMemoryPriority, Knob::kMemoryUsePriorityOom, Knob::kMemoryOomGroup,
                   Knob::kMemoryMin}) {
      INFO(knobSpec(k).name);
      CHECK_FALSE(s.has(k));
    }
  }
  SECTION("an Anolis v1 memory hierarchy has each extension whose file is there") {
    const CgroupLayout layout(kV1, CgroupDriver::kCgroupfs);
    test::TempTree tree({{"memory/kubepods/memory.wmark_ratio", "0\n"},
                         {"memory/kubepods/memory.wmark_min_adj", "0\n"},
                         {"memory/kubepods/memory.priority", "0\n"},
                         {"memory/kubepods/memory.oom.group", "0\n"}});
    const KnobSupport s = KnobSupport::probe(tree.path(), layout);
    CHECK(s.has(Knob::kMemoryWmarkRatio));
    CHECK(s.has(Knob::kMemoryWmarkMinAdj));
    CHECK(s.has(Knob::kMemoryPriority));
    CHECK(s.has(Knob::kMemoryOomGroup));
    CHECK_FALSE(s.has(Knob::kMemoryWmarkScaleFactor));
    CHECK_FALSE(s.has(Knob::kMemoryUsePriorityOom));
    CHECK_FALSE(s.has(Knob::kMemorySoftLimit));
  }
  SECTION("a vanilla v2 tree has oom.group and never the soft limit") {
    const CgroupLayout v2(kV2, CgroupDriver::kCgroupfs);
    // A stray file of the v1 name must not make the v1-only knob supported.
    test::TempTree tree(
        {{"kubepods/memory.oom.group", "0\n"}, {"kubepods/memory.soft_limit_in_bytes", "0\n"}});
    const KnobSupport s = KnobSupport::probe(tree.path(), v2);
    CHECK(s.has(Knob::kMemoryOomGroup));
    CHECK_FALSE(s.has(Knob::kMemorySoftLimit));
    CHECK_FALSE(s.has(Knob::kMemoryPriority));
    CHECK_FALSE(s.has(Knob::kMemoryWmarkRatio));
  }
}

namespace {

// Both absent, or the same text.
bool sameName(const char* a, const char* b) {
  return (a == nullptr || b == nullptr) ? a == b : std::string_view(a) == b;
}

}  // namespace

TEST_CASE("each knob's files are those of its row in the one cgroup file table", "[knob]") {
  for (size_t i = 0; i < kKnobCount; ++i) {
    const KnobSpec& k = knobSpec(static_cast<Knob>(i));
    const CgroupFileSpec& row = cgroupFileSpec(k.file);
    INFO(k.name);
    // Compared as text: equal literals need not share an address (the ASan build
    // does not merge them).
    CHECK(sameName(k.v1Subsystem, row.v1Subsystem));
    CHECK(sameName(k.v1File, row.v1File));
    CHECK(sameName(k.v2File, row.v2File));
    CHECK(std::string(k.name) == (row.v1File != nullptr ? row.v1File : row.v2File));
  }
  for (size_t i = 0; i < kCgroupFileCount; ++i) {
    const CgroupFileSpec& row = cgroupFileSpec(static_cast<CgroupFile>(i));
    CHECK(static_cast<size_t>(row.file) == i);
    CHECK((row.v1File != nullptr || row.v2File != nullptr));
  }
  // The two v2 cpuset lists, named once: the one written (whose empty value means
  // the parent's, read from the one in force) and the one in force.
  const CgroupFileSpec& asked = cgroupFileSpec(CgroupFile::kCpusetCpus);
  const CgroupFileSpec& inForce = cgroupFileSpec(CgroupFile::kCpusetCpusEffective);
  CHECK(knobSpec(Knob::kCpusetCpus).file == CgroupFile::kCpusetCpus);
  CHECK(std::string(asked.v2File) == "cpuset.cpus");
  CHECK(std::string(asked.v2Fallback) == "cpuset.cpus.effective");
  CHECK(std::string(inForce.v2File) == "cpuset.cpus.effective");
  CHECK(std::string(inForce.v1File) == std::string(asked.v1File));
  for (size_t i = 0; i < kCgroupFileCount; ++i) {
    if (static_cast<CgroupFile>(i) == CgroupFile::kCpusetCpus) continue;
    CHECK(cgroupFileSpec(static_cast<CgroupFile>(i)).v2Fallback == nullptr);
  }
  // A file a version lacks has no path there, so no reader or probe builds one.
  const CgroupLayout v2(CgroupVersion::kV2, CgroupDriver::kCgroupfs);
  CHECK(cgroupFilePath(v2, "/sys/fs/cgroup", "kubepods", CgroupFile::kMemorySoftLimit).empty());
  CHECK(cgroupFallbackPath(v2, "/r", "kubepods", CgroupFile::kCpusetCpus) ==
        "/r/kubepods/cpuset.cpus.effective");
  const CgroupLayout v1(CgroupVersion::kV1, CgroupDriver::kCgroupfs);
  CHECK(cgroupFallbackPath(v1, "/r", "kubepods", CgroupFile::kCpusetCpus).empty());
}

}  // namespace test_cgroupfs_knob
