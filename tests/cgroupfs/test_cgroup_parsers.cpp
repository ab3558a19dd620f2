// Tests for cgroupfs/cgroup_parsers: real captures (an EKS node's v1 container,
// two v2 cgroups; tests/fixtures/cgroup/, see tests/fixtures/SOURCES.md),
// automaxprocs' quota edge cases, and hostile input (empty, truncated, NUL,
// garbage, overflow, huge).
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/cgroup_parsers.h"
#include "tests/support/temp_tree.h"

namespace test_cgroupfs_cgroup_parsers {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::string_literals;

namespace {

// The EKS node's Burstable pod's containerd container, under each v1 controller.
const std::string kEksContainer =
    "kubepods.slice/kubepods-burstable.slice/"
    "kubepods-burstable-pod7a96c459_d529_44ae_9f99_90d3798d6426.slice/"
    "cri-containerd-1d3d308a7d48a27814a68bf33a44acf4441c9c02463ca0bc1cdfdc8c0b4a8496.scope";
const std::string kEks = "cgroup/v1/elastic-amzn2-eks-node/sys/fs/cgroup/";
const std::string kSessionScope =
    "cgroup/v2/elastic-session-scope/sys/fs/cgroup/user.slice/user-1000.slice/session-520.scope/";
const std::string kTelegraf = "cgroup/v2/telegraf/";
const std::string kQuota = "cgroup/quota-edge-cases/automaxprocs/";

std::string fixture(const std::string& rel) {
  const std::string path = test::fixturePath(rel);
  auto text = readFile(path);
  INFO(path << ": " << (text.ok() ? "" : text.error().message));
  REQUIRE(text.ok());
  return *text;
}

// The error message, or "" for a value.
template <typename T>
std::string messageOf(const Result<T>& r) {
  return r.ok() ? "" : r.error().message;
}

using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

}  // namespace

// ---- single values ----

TEST_CASE("parseSingleUint reads the EKS container's cpuacct.usage and memory usage exactly") {
  auto usage = parseSingleUint(fixture(kEks + "cpu,cpuacct/" + kEksContainer + "/cpuacct.usage"));
  REQUIRE(usage.ok());
  CHECK(*usage == 124659500367000u);
  auto memory =
      parseSingleUint(fixture(kEks + "memory/" + kEksContainer + "/memory.usage_in_bytes"));
  REQUIRE(memory.ok());
  CHECK(*memory == 1215860736u);
  auto current = parseSingleUint(fixture(kTelegraf + "memory.current"));
  REQUIRE(current.ok());
  CHECK(*current == 13071106048u);
  auto sessionCurrent = parseSingleUint(fixture(kSessionScope + "memory.current"));
  REQUIRE(sessionCurrent.ok());
  CHECK(*sessionCurrent == 10498404352u);
}

TEST_CASE("parseSingleUint accepts UINT64_MAX and calls one more out of range") {
  auto max = parseSingleUint("18446744073709551615\n");
  REQUIRE(max.ok());
  CHECK(*max == UINT64_MAX);
  CHECK_THAT(messageOf(parseSingleUint("18446744073709551616\n")),
             Equals("value \"18446744073709551616\" is out of range for uint64"));
  CHECK_THAT(messageOf(parseSingleUint(std::string(5000, '9') + "\n")),
             Contains("is out of range for uint64"));
}

TEST_CASE("parseSingleUint rejects empty, truncated, multi-line, signed, padded and NUL input") {
  CHECK_THAT(messageOf(parseSingleUint("")),
             Equals("value: empty input (expected one unsigned integer)"));
  // A read cut short: "12" may be the start of "12345".
  CHECK_THAT(messageOf(parseSingleUint("12")),
             Equals("value: \"12\": no newline at end of input (truncated?)"));
  CHECK_THAT(messageOf(parseSingleUint("\n")), Equals("value \"\" is not an unsigned integer"));
  CHECK_THAT(messageOf(parseSingleUint("1\n2\n")), Contains("value: more than one line"));
  CHECK_THAT(messageOf(parseSingleUint("-1\n")), Equals("value \"-1\" is not an unsigned integer"));
  CHECK_THAT(messageOf(parseSingleUint("+1\n")), Equals("value \"+1\" is not an unsigned integer"));
  CHECK_THAT(messageOf(parseSingleUint(" 1\n")), Contains("is not an unsigned integer"));
  CHECK_THAT(messageOf(parseSingleUint("1 \n")), Contains("is not an unsigned integer"));
  CHECK_THAT(messageOf(parseSingleUint("1\r\n")),
             Equals("value \"1\\x0d\" is not an unsigned integer"));
  CHECK_THAT(messageOf(parseSingleUint("12\0"
                                       "3\n"s)),
             Equals("value \"12\\x003\" is not an unsigned integer"));
  CHECK_THAT(messageOf(parseSingleUint("max\n")), Contains("is not an unsigned integer"));
  CHECK_THAT(messageOf(parseSingleUint("0x10\n")), Contains("is not an unsigned integer"));
}

TEST_CASE("parseSingleInt reads -1 and quotas and rejects overflow, '+' and a lone '-'") {
  auto unlimited =
      parseSingleInt(fixture(kEks + "cpu,cpuacct/" + kEksContainer + "/cpu.cfs_quota_us"));
  REQUIRE(unlimited.ok());
  CHECK(*unlimited == -1);
  auto quota = parseSingleInt(fixture(kQuota + "cpu/cpu.cfs_quota_us"));
  REQUIRE(quota.ok());
  CHECK(*quota == 600000);
  auto lowest = parseSingleInt("-9223372036854775808\n");
  REQUIRE(lowest.ok());
  CHECK(*lowest == INT64_MIN);
  CHECK_THAT(messageOf(parseSingleInt("9223372036854775808\n")),
             Equals("value \"9223372036854775808\" is out of range for int64"));
  CHECK_THAT(messageOf(parseSingleInt("-9223372036854775809\n")), Contains("out of range"));
  CHECK_THAT(messageOf(parseSingleInt("+5\n")), Equals("value \"+5\" is not an integer"));
  CHECK_THAT(messageOf(parseSingleInt("-\n")), Equals("value \"-\" is not an integer"));
  CHECK_THAT(messageOf(parseSingleInt("--1\n")), Contains("is not an integer"));
  CHECK_THAT(messageOf(parseSingleInt("-1")), Contains("truncated"));
  CHECK_THAT(messageOf(parseSingleInt("")), Contains("empty input"));
}

// ---- flat-keyed files ----

TEST_CASE("parseFlatKeyed reads the EKS container's v1 cpu.stat and memory.stat exactly") {
  auto cpuStat = parseFlatKeyed(fixture(kEks + "cpu,cpuacct/" + kEksContainer + "/cpu.stat"));
  REQUIRE(cpuStat.ok());
  CHECK(cpuStat->size() == 3);
  CHECK(cpuStat->at("nr_periods") == 0);
  CHECK(cpuStat->at("nr_throttled") == 0);
  CHECK(cpuStat->at("throttled_time") == 0);

  auto memStat = parseFlatKeyed(fixture(kEks + "memory/" + kEksContainer + "/memory.stat"));
  INFO(messageOf(memStat));
  REQUIRE(memStat.ok());
  CHECK(memStat->size() == 36);
  // koordlet's v1 usage: total_inactive_anon + total_active_anon + total_unevictable.
  CHECK(memStat->at("total_inactive_anon") == 1119498240u);
  CHECK(memStat->at("total_active_anon") == 0);
  CHECK(memStat->at("total_unevictable") == 0);
  CHECK(memStat->at("total_cache") == 78397440u);
  CHECK(memStat->at("rss") == 1119465472u);
  CHECK(memStat->at("total_inactive_file") == 78557184u);
  CHECK(memStat->at("hierarchical_memory_limit") == 2147483648u);
  CHECK(memStat->at("total_pgfault") == 116218146u);
}

TEST_CASE("parseFlatKeyed reads v2 cpu.stat and memory.stat captures exactly") {
  auto telegrafCpu = parseFlatKeyed(fixture(kTelegraf + "cpu.stat"));
  REQUIRE(telegrafCpu.ok());
  CHECK(telegrafCpu->size() == 9);
  CHECK(telegrafCpu->at("usage_usec") == 98701325189u);
  CHECK(telegrafCpu->at("user_usec") == 61355716211u);
  CHECK(telegrafCpu->at("system_usec") == 37345608977u);
  CHECK(telegrafCpu->at("nr_periods") == 3936904u);
  CHECK(telegrafCpu->at("nr_throttled") == 6004u);
  CHECK(telegrafCpu->at("throttled_usec") == 19175137007u);
  CHECK(telegrafCpu->at("core_sched.force_idle_usec") == 0);  // unknown keys are kept

  auto sessionCpu = parseFlatKeyed(fixture(kSessionScope + "cpu.stat"));
  REQUIRE(sessionCpu.ok());
  CHECK(sessionCpu->at("usage_usec") == 3611347518u);
  CHECK(sessionCpu->at("user_usec") == 2915072455u);
  CHECK(sessionCpu->at("system_usec") == 696275063u);
  CHECK(sessionCpu->at("nr_periods") == 0);

  auto telegrafMem = parseFlatKeyed(fixture(kTelegraf + "memory.stat"));
  INFO(messageOf(telegrafMem));
  REQUIRE(telegrafMem.ok());
  CHECK(telegrafMem->size() == 47);
  // koordlet's v2 usage: inactive_anon + active_anon + unevictable.
  CHECK(telegrafMem->at("inactive_anon") == 2471559168u);
  CHECK(telegrafMem->at("active_anon") == 180224u);
  CHECK(telegrafMem->at("unevictable") == 0);
  CHECK(telegrafMem->at("anon") == 2471755776u);
  CHECK(telegrafMem->at("file") == 8532865024u);
  CHECK(telegrafMem->at("thp_collapse_alloc") == 3);

  auto sessionMem = parseFlatKeyed(fixture(kSessionScope + "memory.stat"));
  REQUIRE(sessionMem.ok());
  CHECK(sessionMem->size() == 53);
  CHECK(sessionMem->at("anon") == 1411100672u);
  CHECK(sessionMem->at("file") == 8621432832u);
  CHECK(sessionMem->at("inactive_anon") == 209301504u);
  CHECK(sessionMem->at("active_anon") == 1471877120u);
  CHECK(sessionMem->at("active_file") == 1935663104u);
  CHECK(sessionMem->at("thp_collapse_alloc") == 1022u);
}

TEST_CASE("parseFlatKeyed errors name the key at fault") {
  CHECK_THAT(messageOf(parseFlatKeyed("")), Equals("empty input (expected \"key value\" lines)"));
  // The last value may have been cut short: "nr_throttled 60" of "nr_throttled 6004".
  CHECK_THAT(messageOf(parseFlatKeyed("nr_periods 5\nnr_throttled 60")),
             Equals("key \"nr_throttled\": no newline at end of input (truncated?)"));
  CHECK_THAT(messageOf(parseFlatKeyed("nr_periods\n")),
             Equals("key \"nr_periods\": value missing"));
  CHECK_THAT(messageOf(parseFlatKeyed("nr_periods 1 2\n")),
             Equals("key \"nr_periods\": unexpected field \"2\" after the value"));
  CHECK_THAT(messageOf(parseFlatKeyed("usage_usec abc\n")),
             Equals("key \"usage_usec\": value \"abc\" is not an unsigned integer"));
  CHECK_THAT(messageOf(parseFlatKeyed("usage_usec -1\n")),
             Equals("key \"usage_usec\": value \"-1\" is not an unsigned integer"));
  CHECK_THAT(
      messageOf(parseFlatKeyed("usage_usec 18446744073709551616\n")),
      Equals("key \"usage_usec\": value \"18446744073709551616\" is out of range for uint64"));
  CHECK_THAT(messageOf(parseFlatKeyed("anon 1\nfile 2\nanon 3\n")),
             Equals("key \"anon\": appears twice"));
  CHECK_THAT(messageOf(parseFlatKeyed("anon 1\n\nfile 2\n")),
             Equals("line 2: no key (blank line)"));
  CHECK_THAT(messageOf(parseFlatKeyed("\n")), Equals("line 1: no key (blank line)"));
  CHECK_THAT(messageOf(parseFlatKeyed("an\0on 1\n"s)),
             Equals("line 1: key \"an\\x00on\" is not printable ASCII"));
  CHECK_THAT(messageOf(parseFlatKeyed("anon 1\r\n")),
             Equals("key \"anon\": value \"1\\x0d\" is not an unsigned integer"));
  // Tabs and runs of spaces separate fields too.
  auto spaced = parseFlatKeyed("anon\t1\nfile   2\n");
  REQUIRE(spaced.ok());
  CHECK(spaced->at("file") == 2);
}

TEST_CASE("parseFlatKeyed reads a megabyte of keys and quotes a megabyte of garbage briefly") {
  std::string many;
  for (int i = 0; i < 50000; ++i)
    many += "key_" + std::to_string(i) + " " + std::to_string(i) + "\n";
  auto parsed = parseFlatKeyed(many);
  REQUIRE(parsed.ok());
  CHECK(parsed->size() == 50000);
  CHECK(parsed->at("key_49999") == 49999u);

  const std::string binary(1 << 20, '\x01');
  const std::string message = messageOf(parseFlatKeyed(binary + " 1\n"));
  CHECK_THAT(message, Contains("is not printable ASCII") && Contains("(1048576 bytes)"));
  // 40 bytes shown, each escaped as \x01.
  CHECK(message.size() < 300);
  const std::string letters(1 << 20, 'x');
  const std::string valueMessage = messageOf(parseFlatKeyed("k " + letters + "\n"));
  CHECK_THAT(valueMessage, Contains("is not an unsigned integer"));
  CHECK(valueMessage.size() < 200);
}

// pickFlatKeyed with these keys, as "key=value" pairs in order, or its error.
std::string picked(std::string_view text, std::vector<std::string_view> keys) {
  std::vector<std::optional<uint64_t>> values(keys.size());
  Status st = pickFlatKeyed(text, keys, values);
  if (!st) return st.error().message;
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i)
    out += std::string(keys[i]) + "=" + std::to_string(*values[i]) + " ";
  return out;
}

TEST_CASE("pickFlatKeyed keeps exactly parseFlatKeyed's values for the keys it is asked") {
  for (const std::string& rel :
       {kTelegraf + "memory.stat", kSessionScope + "memory.stat", kTelegraf + "cpu.stat",
        kEks + "memory/" + kEksContainer + "/memory.stat"}) {
    INFO(rel);
    const std::string text = fixture(rel);
    auto all = parseFlatKeyed(text);
    REQUIRE(all.ok());
    // Every key, one at a time and all at once (the collector asks for a few).
    std::vector<std::string_view> keys;
    for (const auto& [key, value] : *all) {
      keys.push_back(key);
      CHECK(picked(text, {key}) == key + "=" + std::to_string(value) + " ");
    }
    std::vector<std::optional<uint64_t>> values(keys.size());
    REQUIRE(pickFlatKeyed(text, keys, values).ok());
    for (size_t i = 0; i < keys.size(); ++i) CHECK(*values[i] == all->find(keys[i])->second);
  }
}

TEST_CASE("pickFlatKeyed checks the lines it keeps and skips the others unread") {
  CHECK(picked("anon 1\nfile 2\n", {"file", "anon"}) == "file=2 anon=1 ");
  CHECK(picked("  anon\t1\n", {"anon"}) == "anon=1 ");
  // A line it does not keep is not parsed: the kernel's other keys may change.
  CHECK(picked("odd x y z\nanon 1\n", {"anon"}) == "anon=1 ");
  // The lines it keeps fail as parseFlatKeyed's do.
  CHECK(picked("anon x\n", {"anon"}) == "key \"anon\": value \"x\" is not an unsigned integer");
  CHECK(picked("anon 1 2\n", {"anon"}) == "key \"anon\": unexpected field \"2\" after the value");
  CHECK(picked("anon 1\nanon 2\n", {"anon"}) == "key \"anon\": appears twice");
  CHECK(picked("anon 1\n", {"anon", "file"}) == "key \"file\": missing");
  CHECK(picked("", {"anon"}) == "empty input (expected \"key value\" lines)");
  // Whatever the key: a truncated read and a blank line are errors.
  CHECK(picked("anon 1\nfile 2", {"anon"}) ==
        "key \"file\": no newline at end of input (truncated?)");
  CHECK(picked("anon 1\n\nfile 2\n", {"anon"}) == "line 2: no key (blank line)");
}

TEST_CASE("pickFlatKeyed lets the keys after the required ones be missing, and only those") {
  std::vector<std::string_view> keys = {"anon", "file", "active_file"};
  std::vector<std::optional<uint64_t>> values(keys.size());
  REQUIRE(pickFlatKeyed("anon 1\nfile 2\n", keys, values, 2).ok());
  CHECK(values[0] == 1u);
  CHECK(values[1] == 2u);
  CHECK_FALSE(values[2].has_value());
  Status st = pickFlatKeyed("anon 1\nactive_file 3\n", keys, values, 2);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message == "key \"file\": missing");
  REQUIRE(pickFlatKeyed("anon 1\nfile 2\nactive_file 3\n", keys, values, 2).ok());
  CHECK(values[2] == 3u);
  // Twice is an error whether required or not.
  CHECK_FALSE(
      pickFlatKeyed("anon 1\nfile 2\nactive_file 3\nactive_file 3\n", keys, values, 2).ok());
}

TEST_CASE("pickFlatKeyed never passes a truncated capture") {
  const std::string text = fixture(kTelegraf + "memory.stat");
  const std::vector<std::string_view> keys = {"anon", "inactive_file", "active_file"};
  std::vector<std::optional<uint64_t>> values(keys.size());
  for (size_t n = 0; n < text.size(); ++n) {
    if (n > 0 && text[n - 1] == '\n') continue;  // a whole-line prefix may be complete
    INFO("prefix of " << n << " bytes");
    CHECK_FALSE(pickFlatKeyed(std::string_view(text.data(), n), keys, values).ok());
  }
}

// ---- cpu.max and cfs quota/period ----

TEST_CASE("parseCpuMax reads a 48-cpu quota and an unlimited one from real captures") {
  auto telegraf = parseCpuMax(fixture(kTelegraf + "cpu.max"));
  REQUIRE(telegraf.ok());
  REQUIRE(telegraf->quotaUs.has_value());
  CHECK(*telegraf->quotaUs == 4800000);
  CHECK(telegraf->periodUs == 100000u);

  auto session = parseCpuMax(fixture(kSessionScope + "cpu.max"));
  REQUIRE(session.ok());
  CHECK_FALSE(session->quotaUs.has_value());
  CHECK(session->periodUs == 100000u);
}

// automaxprocs' hand-written cpu.max cases mostly lack the final newline the
// kernel always writes, so as files they are truncated reads; their meaning is
// checked with the newline added.
TEST_CASE("parseCpuMax on automaxprocs' edge cases: set, unset, only-max and the invalid ones") {
  const std::string v2 = kQuota + "v2/";
  for (const char* name : {"set", "unset", "only-max", "invalid-max", "invalid-period"}) {
    INFO(name);
    CHECK_THAT(messageOf(parseCpuMax(fixture(v2 + name))), Contains("(truncated?)"));
  }
  auto set = parseCpuMax(fixture(v2 + "set") + "\n");
  REQUIRE(set.ok());
  REQUIRE(set->quotaUs.has_value());
  CHECK(*set->quotaUs == 250000);
  CHECK(set->periodUs == 100000u);

  auto unset = parseCpuMax(fixture(v2 + "unset") + "\n");
  REQUIRE(unset.ok());
  CHECK_FALSE(unset->quotaUs.has_value());
  CHECK(unset->periodUs == 100000u);

  // A lone quota keeps the kernel's default period.
  auto onlyMax = parseCpuMax(fixture(v2 + "only-max") + "\n");
  REQUIRE(onlyMax.ok());
  REQUIRE(onlyMax->quotaUs.has_value());
  CHECK(*onlyMax->quotaUs == 500000);
  CHECK(onlyMax->periodUs == 100000u);

  CHECK_THAT(messageOf(parseCpuMax(fixture(v2 + "invalid-max") + "\n")),
             Equals("cpu.max: quota \"asdf\" is not an unsigned integer or \"max\""));
  CHECK_THAT(messageOf(parseCpuMax(fixture(v2 + "invalid-period") + "\n")),
             Equals("cpu.max: period \"njn\" is not an unsigned integer"));
  CHECK_THAT(messageOf(parseCpuMax(fixture(v2 + "empty"))),
             Equals("cpu.max: empty input (expected \"<quota|max> <period>\")"));
  CHECK_THAT(messageOf(parseCpuMax(fixture(v2 + "too-few-fields"))),
             Equals("cpu.max: quota missing (expected \"<quota|max> <period>\")"));
  CHECK_THAT(messageOf(parseCpuMax(fixture(v2 + "too-many-fields"))),
             Equals("cpu.max: unexpected third field \"100\" (expected \"<quota|max> <period>\")"));
}

// A zero period never comes from the kernel (it refuses periods under 1 ms) and
// would divide by zero in quota/period, so both versions treat it as an error.
TEST_CASE("a zero period is an error in cpu.max and in cpu.cfs_period_us") {
  CHECK_THAT(messageOf(parseCpuMax(fixture(kQuota + "v2/zero-period"))),
             Equals("cpu.max: period 0 is invalid (kernel minimum 1000)"));
  CHECK_THAT(messageOf(parseCfsQuotaPeriod(fixture(kQuota + "zero-period/cpu.cfs_quota_us"),
                                           fixture(kQuota + "zero-period/cpu.cfs_period_us"))),
             Equals("cpu.cfs_period_us: period 0 is invalid (kernel minimum 1000)"));
  CHECK_THAT(messageOf(parseCpuMax("max 0\n")), Contains("period 0 is invalid"));
}

TEST_CASE("parseCpuMax rejects negative, overflowing and NUL-laden fields") {
  CHECK_THAT(messageOf(parseCpuMax("-1 100000\n")),
             Equals("cpu.max: quota \"-1\" is not an unsigned integer or \"max\""));
  CHECK_THAT(messageOf(parseCpuMax("9223372036854775808 100000\n")),
             Equals("cpu.max: quota \"9223372036854775808\" is out of range for int64"));
  CHECK_THAT(messageOf(parseCpuMax("max 18446744073709551616\n")),
             Contains("period \"18446744073709551616\" is out of range for uint64"));
  CHECK_THAT(messageOf(parseCpuMax("max\0 100000\n"s)), Contains("quota \"max\\x00\""));
  CHECK_THAT(messageOf(parseCpuMax("max 100000\nmax 100000\n")), Contains("more than one line"));
  auto huge = parseCpuMax("9223372036854775807 1000000\n");
  REQUIRE(huge.ok());
  CHECK(*huge->quotaUs == INT64_MAX);
}

TEST_CASE("parseCfsQuotaPeriod reads automaxprocs' v1 cases: set, unlimited, invalid, empty") {
  auto set = parseCfsQuotaPeriod(fixture(kQuota + "cpu/cpu.cfs_quota_us"),
                                 fixture(kQuota + "cpu/cpu.cfs_period_us"));
  REQUIRE(set.ok());
  REQUIRE(set->quotaUs.has_value());
  CHECK(*set->quotaUs == 600000);
  CHECK(set->periodUs == 100000u);

  auto undefined = parseCfsQuotaPeriod(fixture(kQuota + "undefined/cpu.cfs_quota_us"),
                                       fixture(kQuota + "undefined/cpu.cfs_period_us"));
  REQUIRE(undefined.ok());
  CHECK_FALSE(undefined->quotaUs.has_value());
  CHECK(undefined->periodUs == 100000u);

  auto eks =
      parseCfsQuotaPeriod(fixture(kEks + "cpu,cpuacct/" + kEksContainer + "/cpu.cfs_quota_us"),
                          fixture(kEks + "cpu,cpuacct/" + kEksContainer + "/cpu.cfs_period_us"));
  REQUIRE(eks.ok());
  CHECK_FALSE(eks->quotaUs.has_value());

  CHECK_THAT(
      messageOf(parseCfsQuotaPeriod(fixture(kQuota + "invalid/cpu.cfs_quota_us"), "100000\n")),
      Equals("cpu.cfs_quota_us: value \"non-an-integer\" is not an integer"));
  CHECK_THAT(messageOf(parseCfsQuotaPeriod(fixture(kQuota + "empty/cpu.cfs_quota_us"), "100000\n")),
             Equals("cpu.cfs_quota_us: value: empty input (expected one integer)"));
  CHECK_THAT(messageOf(parseCfsQuotaPeriod("-2\n", "100000\n")),
             Equals("cpu.cfs_quota_us: value -2 is negative and not -1 (unlimited)"));
  CHECK_THAT(messageOf(parseCfsQuotaPeriod("-1\n", "-1\n")),
             Equals("cpu.cfs_period_us: value \"-1\" is not an unsigned integer"));
}

TEST_CASE("a v1 cgroup without cpu.cfs_period_us is a read error (ENOENT), not a parse") {
  // automaxprocs' "undefined-period" case: the quota file alone.
  auto quota = readFile(test::fixturePath(kQuota + "undefined-period/cpu.cfs_quota_us"));
  REQUIRE(quota.ok());
  CHECK(*quota == "800000\n");
  auto period = readFile(test::fixturePath(kQuota + "undefined-period/cpu.cfs_period_us"));
  REQUIRE_FALSE(period.ok());
  CHECK(period.error().sysErrno == ENOENT);
}

// ---- cpu lists ----

TEST_CASE("parseCpuList reads real cpusets and an empty cpuset as no cpus") {
  auto eks = parseCpuList(fixture(kEks + "cpuset/" + kEksContainer + "/cpuset.cpus"));
  REQUIRE(eks.ok());
  CHECK(*eks == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  auto effective =
      parseCpuList(fixture(kEks + "cpuset/" + kEksContainer + "/cpuset.effective_cpus"));
  REQUIRE(effective.ok());
  CHECK(effective->size() == 8);

  auto telegraf = parseCpuList(fixture(kTelegraf + "cpuset.cpus.effective"));
  REQUIRE(telegraf.ok());
  REQUIRE(telegraf->size() == 96);
  CHECK(telegraf->front() == 0);
  CHECK(telegraf->back() == 95);

  // telegraf's cpuset.cpus is "\n": nothing configured.
  auto unset = parseCpuList(fixture(kTelegraf + "cpuset.cpus"));
  REQUIRE(unset.ok());
  CHECK(unset->empty());
  auto empty = parseCpuList("");
  REQUIRE(empty.ok());
  CHECK(empty->empty());

  auto mixed = parseCpuList("0-3,8,10-11\n");
  REQUIRE(mixed.ok());
  CHECK(*mixed == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
}

TEST_CASE("parseCpuList rejects reversed ranges, ids above 65535, overlaps and bad elements") {
  CHECK_THAT(messageOf(parseCpuList("3-1\n")),
             Equals("cpu list element 1 \"3-1\": range is reversed"));
  CHECK_THAT(messageOf(parseCpuList("0-65536\n")),
             Equals("cpu list element 1 \"0-65536\": cpu id \"65536\" exceeds 65535"));
  CHECK_THAT(messageOf(parseCpuList("0,99999999999999999999999\n")),
             Equals("cpu list element 2 \"99999999999999999999999\": cpu id "
                    "\"99999999999999999999999\" is out of range for uint64"));
  CHECK_THAT(messageOf(parseCpuList("0-3,2\n")),
             Equals("cpu list element 2 \"2\": not after the previous element (unsorted or "
                    "overlapping)"));
  CHECK_THAT(messageOf(parseCpuList("8,0\n")), Contains("unsorted or overlapping"));
  CHECK_THAT(messageOf(parseCpuList("1,1\n")), Contains("unsorted or overlapping"));
  CHECK_THAT(messageOf(parseCpuList("0,,1\n")), Equals("cpu list element 2 is empty in \"0,,1\""));
  CHECK_THAT(messageOf(parseCpuList("0,\n")), Contains("element 2 is empty"));
  CHECK_THAT(messageOf(parseCpuList("-3\n")),
             Equals("cpu list element 1 \"-3\": cpu id \"\" is not an unsigned integer"));
  CHECK_THAT(messageOf(parseCpuList("1-2-3\n")), Contains("cpu id \"2-3\" is not an unsigned"));
  CHECK_THAT(messageOf(parseCpuList(" 0-3\n")), Contains("is not an unsigned integer"));
  CHECK_THAT(messageOf(parseCpuList("0-3")),
             Equals("cpu list: \"0-3\": no newline at end of input (truncated?)"));
  CHECK_THAT(messageOf(parseCpuList("0\0-3\n"s)), Contains("\\x00"));
  CHECK_THAT(messageOf(parseCpuList("\n\n")), Contains("more than one line"));
}

TEST_CASE("parseCpuList never expands more than 65536 cpus, whatever the input") {
  auto all = parseCpuList("0-65535\n");
  REQUIRE(all.ok());
  CHECK(all->size() == 65536);
  // A hostile range is rejected before anything is allocated for it.
  CHECK_THAT(messageOf(parseCpuList("0-4294967295\n")), Contains("exceeds 65535"));
  // A megabyte of repeated full ranges fails at the second element.
  std::string repeated;
  while (repeated.size() < (1u << 20)) repeated += "0-65535,";
  repeated.back() = '\n';
  CHECK_THAT(messageOf(parseCpuList(repeated)),
             Contains("element 2 \"0-65535\": not after the previous element"));
}

// ---- hostile input, all parsers ----

TEST_CASE("every parser survives every truncation of real captures and random bytes") {
  const std::vector<std::string> captures = {
      fixture(kEks + "memory/" + kEksContainer + "/memory.stat"),
      fixture(kTelegraf + "cpu.stat"),
      fixture(kTelegraf + "cpu.max"),
      fixture(kTelegraf + "cpuset.cpus.effective"),
      fixture(kEks + "cpu,cpuacct/" + kEksContainer + "/cpuacct.usage"),
  };
  auto runAll = [](std::string_view text) {
    // Only the absence of crashes (and ASan/UBSan reports) is checked here.
    (void)parseSingleUint(text);
    (void)parseSingleInt(text);
    (void)parseFlatKeyed(text);
    (void)parseCpuMax(text);
    (void)parseCfsQuotaPeriod(text, text);
    (void)parseCpuList(text);
  };
  for (const std::string& capture : captures) {
    for (size_t n = 0; n <= capture.size(); ++n) {
      const std::string_view prefix(capture.data(), n);
      runAll(prefix);
      // A cut anywhere but after a '\n' must never pass as a complete value.
      if (n > 0 && capture[n - 1] != '\n') {
        INFO("prefix of " << n << " bytes");
        CHECK_FALSE(parseFlatKeyed(prefix).ok());
        CHECK_FALSE(parseSingleUint(prefix).ok());
        CHECK_FALSE(parseCpuMax(prefix).ok());
        CHECK_FALSE(parseCpuList(prefix).ok());
      }
    }
  }
  std::mt19937 rng(20240611);
  const std::string alphabet = "0123456789 -,\n\t\0maxkey_"s;
  for (int round = 0; round < 5000; ++round) {
    std::string text(rng() % 64, '\0');
    for (char& c : text) {
      c = round % 2 == 0 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng() & 0xff);
    }
    runAll(text);
  }
  SUCCEED("no crash");
}

}  // namespace test_cgroupfs_cgroup_parsers
