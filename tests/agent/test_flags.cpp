#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "agent/feature_gates.h"
#include "agent/flag_set.h"

namespace test_agent_flags {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;
using Args = std::vector<std::string>;

namespace {

// A FlagSet bound to one variable of each type, as a test fixture.
struct Bound {
  std::string addr = ":9316";
  bool dryRun = false;
  bool nri = true;
  int v = 0;
  int64_t bytes = 100;
  uint64_t size = 1800;
  double qps = 20;
  std::chrono::nanoseconds interval = 1s;
  std::vector<std::string> stages;
  std::vector<std::string> funcValues;
  FlagSet fs;

  Bound() {
    fs.stringVar(&addr, "addr", "listen address");
    fs.boolVar(&dryRun, "dry-run", "do not write");
    fs.boolVar(&nri, "enable-nri-runtime-hook", "serve NRI");
    fs.intVar(&v, "v", "verbosity");
    fs.int64Var(&bytes, "tsdb-max-bytes", "bytes");
    fs.uint64Var(&size, "log_file_max_size", "MB");
    fs.doubleVar(&qps, "kube-api-qps", "qps");
    fs.durationVar(&interval, "collect-res-used-interval", "interval");
    fs.stringSliceVar(&stages, "runtime-hooks-disable-stages", "stages");
    fs.funcVar("feature-gates", "mapStringBool", "", "gates", [this](std::string_view s) -> Status {
      if (s == "bad") return makeError("nope");
      funcValues.emplace_back(s);
      return Ok{};
    });
    fs.notImplemented("enable-pprof", FlagType::kBool, "false", "pprof");
    fs.notImplemented("tsdb-retention-duration", FlagType::kDuration, "12h0m0s", "retention");
    fs.notImplemented("pprof-addr", FlagType::kString, ":9317", "pprof addr");
  }

  Status parse(const Args& args) { return fs.parse(args); }
  std::string error(const Args& args) {
    Status st = fs.parse(args);
    REQUIRE_FALSE(st.ok());
    return st.error().message;
  }
};

}  // namespace

TEST_CASE("one and two dashes, '=' and a separate value all set a flag", "[flags]") {
  for (const Args& args :
       {Args{"-addr=:1"}, Args{"--addr=:1"}, Args{"-addr", ":1"}, Args{"--addr", ":1"}}) {
    Bound b;
    REQUIRE(b.parse(args).ok());
    CHECK(b.addr == ":1");
    CHECK(b.fs.isGiven("addr"));
  }
}

TEST_CASE("a value may contain '=' and may start with a dash", "[flags]") {
  Bound b;
  REQUIRE(b.parse({"--feature-gates=A=true,B=false", "-addr", "-weird"}).ok());
  CHECK(b.funcValues == std::vector<std::string>{"A=true,B=false"});
  CHECK(b.addr == "-weird");
  Bound empty;
  REQUIRE(empty.parse({"-addr="}).ok());
  CHECK(empty.addr.empty());
}

TEST_CASE("the last use of a repeated flag wins", "[flags]") {
  Bound b;
  REQUIRE(b.parse({"-v=1", "--v", "5", "-addr=a", "-addr=b"}).ok());
  CHECK(b.v == 5);
  CHECK(b.addr == "b");
}

TEST_CASE("a bare boolean means true and '=' takes every Go ParseBool spelling", "[flags]") {
  {
    Bound b;
    REQUIRE(b.parse({"-dry-run"}).ok());
    CHECK(b.dryRun);
  }
  for (const char* t : {"1", "t", "T", "TRUE", "true", "True"}) {
    Bound b;
    REQUIRE(b.parse({std::string("--dry-run=") + t}).ok());
    CHECK(b.dryRun);
  }
  for (const char* f : {"0", "f", "F", "FALSE", "false", "False"}) {
    Bound b;
    REQUIRE(b.parse({std::string("-enable-nri-runtime-hook=") + f}).ok());
    CHECK_FALSE(b.nri);
  }
  for (const char* bad : {"yes", "no", "tRuE", "", "2", " true"}) {
    Bound b;
    INFO(bad);
    CHECK(b.error({std::string("--dry-run=") + bad}) ==
          std::string("flag --dry-run: invalid boolean \"") + bad + "\"");
  }
}

TEST_CASE("a boolean never takes the next argument as its value", "[flags]") {
  Bound b;
  // Go reads "false" as a positional argument; koordlet takes none, so it is an error.
  const std::string msg = b.error({"-dry-run", "false"});
  CHECK(msg.find("unexpected argument \"false\"") == 0);
  CHECK(msg.find("--dry-run=false") != std::string::npos);
  CHECK(b.dryRun);  // the bare flag itself was applied before the error
}

TEST_CASE("a non-flag argument is an error, also after '--'", "[flags]") {
  Bound b;
  CHECK(b.error({"run"}) == "unexpected argument \"run\": koordlet takes no positional arguments");
  CHECK(Bound().error({"-"}).find("unexpected argument \"-\"") == 0);
  CHECK(Bound().error({""}).find("unexpected argument \"\"") == 0);
  CHECK(Bound().error({"--", "-v=1"}) ==
        "unexpected argument \"-v=1\" after \"--\": koordlet takes no positional arguments");
}

TEST_CASE("'--' ends the flags", "[flags]") {
  Bound b;
  REQUIRE(b.parse({"-v=2", "--"}).ok());
  CHECK(b.v == 2);
}

TEST_CASE("an unknown flag is an error naming it", "[flags]") {
  CHECK(Bound().error({"--nope=1"}) == "flag provided but not defined: --nope");
  CHECK(Bound().error({"-nope"}) == "flag provided but not defined: -nope");
}

TEST_CASE("malformed flag syntax is an error", "[flags]") {
  CHECK(Bound().error({"---addr=x"}) == "bad flag syntax: ---addr=x");
  CHECK(Bound().error({"-=x"}) == "bad flag syntax: -=x");
  CHECK(Bound().error({"--=x"}) == "bad flag syntax: --=x");
}

TEST_CASE("a flag without its value is an error naming it", "[flags]") {
  CHECK(Bound().error({"--addr"}) == "flag --addr: needs a value");
  CHECK(Bound().error({"-v=1", "-collect-res-used-interval"}) ==
        "flag --collect-res-used-interval: needs a value");
}

TEST_CASE("-h, -help and --help request help and stop parsing", "[flags]") {
  for (const char* h : {"-h", "-help", "--help", "--h", "-help=true"}) {
    Bound b;
    INFO(h);
    REQUIRE(b.parse({"-v=3", h, "--nope"}).ok());
    CHECK(b.fs.helpRequested());
    CHECK(b.v == 3);
  }
  Bound b;
  REQUIRE(b.parse({"-v=3"}).ok());
  CHECK_FALSE(b.fs.helpRequested());
}

TEST_CASE("bad values are errors naming the flag and the value", "[flags]") {
  CHECK(Bound().error({"--collect-res-used-interval=1x"}) ==
        "flag --collect-res-used-interval: invalid duration \"1x\": unknown unit \"x\"");
  CHECK(Bound().error({"-collect-res-used-interval", "1"}) ==
        "flag --collect-res-used-interval: invalid duration \"1\": missing unit");
  CHECK(Bound().error({"-v=abc"}) == "flag --v: invalid integer \"abc\"");
  CHECK(Bound().error({"-v=99999999999"}) ==
        "flag --v: invalid integer \"99999999999\": out of range");
  CHECK(Bound().error({"-tsdb-max-bytes=1.5"}) == "flag --tsdb-max-bytes: invalid integer \"1.5\"");
  CHECK(Bound().error({"-log_file_max_size=-1"}) ==
        "flag --log_file_max_size: invalid unsigned integer \"-1\"");
  CHECK(Bound().error({"-kube-api-qps=fast"}) == "flag --kube-api-qps: invalid number \"fast\"");
  CHECK(Bound().error({"--feature-gates", "bad"}) == "flag --feature-gates: nope");
}

TEST_CASE("typed flags store their values", "[flags]") {
  Bound b;
  REQUIRE(b.parse({"-v=0x10", "-tsdb-max-bytes=-5", "-log_file_max_size=0", "-kube-api-qps=2.5e1",
                   "-collect-res-used-interval=1m30s"})
              .ok());
  CHECK(b.v == 16);
  CHECK(b.bytes == -5);
  CHECK(b.size == 0);
  CHECK(b.qps == 25.0);
  CHECK(b.interval == 90s);
}

TEST_CASE("a string slice's first use replaces the default and later uses append", "[flags]") {
  Bound b;
  b.stages = {"default"};
  REQUIRE(b.parse({"-runtime-hooks-disable-stages=PreRunPodSandbox,\"a,b\"",
                   "-runtime-hooks-disable-stages", "PostStopContainer"})
              .ok());
  CHECK(b.stages == std::vector<std::string>{"PreRunPodSandbox", "a,b", "PostStopContainer"});
  Bound empty;
  empty.stages = {"default"};
  REQUIRE(empty.parse({"-runtime-hooks-disable-stages="}).ok());
  CHECK(empty.stages.empty());
}

TEST_CASE("not-implemented flags are validated by type and recorded once when given", "[flags]") {
  Bound b;
  REQUIRE(b.parse({"-enable-pprof", "--tsdb-retention-duration=24h", "-pprof-addr", ":1",
                   "-enable-pprof=false", "-v=1"})
              .ok());
  CHECK(b.fs.notImplementedGiven() ==
        std::vector<std::string>{"enable-pprof", "tsdb-retention-duration", "pprof-addr"});
  CHECK(b.fs.given() ==
        std::vector<std::string>{"enable-pprof", "pprof-addr", "tsdb-retention-duration", "v"});
  CHECK(Bound().error({"--tsdb-retention-duration=12"}) ==
        "flag --tsdb-retention-duration: invalid duration \"12\": missing unit");
  CHECK(Bound().error({"-enable-pprof=yes"}) == "flag --enable-pprof: invalid boolean \"yes\"");
  Bound none;
  REQUIRE(none.parse({}).ok());
  CHECK(none.fs.notImplementedGiven().empty());
  CHECK(none.fs.given().empty());
}

TEST_CASE("usage lists every flag sorted, with type, default and help", "[flags]") {
  Bound b;
  const std::string u = b.fs.usage();
  CHECK(u.find("  -addr string\n    \tlisten address (default \":9316\")\n") != std::string::npos);
  CHECK(u.find("  -collect-res-used-interval duration\n    \tinterval (default 1s)\n") !=
        std::string::npos);
  // A false boolean and a zero value show no default; a true one does.
  CHECK(u.find("  -dry-run\n    \tdo not write\n") != std::string::npos);
  CHECK(u.find("  -enable-nri-runtime-hook\n    \tserve NRI (default true)\n") !=
        std::string::npos);
  CHECK(u.find("  -v int\n    \tverbosity\n") != std::string::npos);
  CHECK(u.find("  -kube-api-qps float\n    \tqps (default 20)\n") != std::string::npos);
  CHECK(u.find("  -tsdb-max-bytes int\n    \tbytes (default 100)\n") != std::string::npos);
  CHECK(u.find("  -log_file_max_size uint\n    \tMB (default 1800)\n") != std::string::npos);
  CHECK(u.find("  -runtime-hooks-disable-stages strings\n    \tstages\n") != std::string::npos);
  CHECK(u.find("  -tsdb-retention-duration duration\n    \tretention (default 12h0m0s) "
               "(accepted for koordlet compatibility; not implemented)\n") != std::string::npos);
  CHECK(u.find("  -pprof-addr string\n    \tpprof addr (default \":9317\") (accepted") !=
        std::string::npos);
  // Sorted by name, as Go prints them.
  CHECK(u.find("-addr ") < u.find("-collect-res-used-interval "));
  CHECK(u.find("-collect-res-used-interval ") < u.find("-dry-run\n"));
  CHECK(u.find("-tsdb-retention-duration ") < u.find("-v int"));
}

TEST_CASE("Go's ParseBool spellings are exactly the accepted booleans", "[flags]") {
  CHECK(*parseGoBool("T"));
  CHECK_FALSE(*parseGoBool("False"));
  CHECK_FALSE(parseGoBool("yes").ok());
  CHECK_FALSE(parseGoBool("fAlse").ok());
}

TEST_CASE("integers follow Go's literal syntax with base 0", "[flags]") {
  CHECK(*parseGoInt("42", 0, 64) == 42);
  CHECK(*parseGoInt("-42", 0, 64) == -42);
  CHECK(*parseGoInt("+7", 0, 64) == 7);
  CHECK(*parseGoInt("0x1F", 0, 64) == 31);
  CHECK(*parseGoInt("0o17", 0, 64) == 15);
  CHECK(*parseGoInt("017", 0, 64) == 15);  // a leading 0 is octal, as in Go
  CHECK(*parseGoInt("0b101", 0, 64) == 5);
  CHECK(*parseGoInt("1_000_000", 0, 64) == 1000000);
  CHECK(*parseGoInt("0x_1F", 0, 64) == 31);
  CHECK(*parseGoInt("0", 0, 64) == 0);
  CHECK(*parseGoInt("-9223372036854775808", 0, 64) == INT64_MIN);
  CHECK(*parseGoInt("2147483647", 0, 32) == 2147483647);
  CHECK(*parseGoInt("-2147483648", 0, 32) == -2147483648LL);
  CHECK_FALSE(parseGoInt("2147483648", 0, 32).ok());
  CHECK_FALSE(parseGoInt("9223372036854775808", 0, 64).ok());
  for (const char* bad : {"", "-", "08", "1__0", "_1", "1_", "0x", "1e3", " 1", "1.0", "0x1G"}) {
    INFO(bad);
    CHECK_FALSE(parseGoInt(bad, 0, 64).ok());
  }
  // Base 10 (klog's -v) takes neither prefixes nor underscores.
  CHECK(*parseGoInt("010", 10, 32) == 10);
  CHECK_FALSE(parseGoInt("0x10", 10, 32).ok());
  CHECK_FALSE(parseGoInt("1_0", 10, 32).ok());
  CHECK(*parseGoUint("18446744073709551615", 0, 64) == UINT64_MAX);
  CHECK_FALSE(parseGoUint("18446744073709551616", 0, 64).ok());
  CHECK_FALSE(parseGoUint("-1", 0, 64).ok());
}

TEST_CASE("floats follow Go's ParseFloat", "[flags]") {
  CHECK(*parseGoFloat("20") == 20.0);
  CHECK(*parseGoFloat("-2.5") == -2.5);
  CHECK(*parseGoFloat(".5") == 0.5);
  CHECK(*parseGoFloat("5.") == 5.0);
  CHECK(*parseGoFloat("1e3") == 1000.0);
  CHECK(*parseGoFloat("1E-2") == 0.01);
  CHECK(*parseGoFloat("+1_000.5") == 1000.5);
  CHECK(*parseGoFloat("0x1p-2") == 0.25);
  CHECK(*parseGoFloat("0x1.8P1") == 3.0);
  CHECK(std::isinf(*parseGoFloat("Inf")));
  CHECK(*parseGoFloat("-infinity") < 0);
  CHECK(std::isnan(*parseGoFloat("NaN")));
  CHECK(*parseGoFloat("1e-400") == 0.0);  // underflow rounds, as in Go
  CHECK(parseGoFloat("1e400").error().message == "invalid number \"1e400\": out of range");
  for (const char* bad : {"", ".", "e5", "1e", "0x1", "1.2.3", "abc", "+nan", "1_", "1._5", " 1"}) {
    INFO(bad);
    CHECK_FALSE(parseGoFloat(bad).ok());
  }
  CHECK(formatGoFloat(20) == "20");
  CHECK(formatGoFloat(2) == "2");
  CHECK(formatGoFloat(0.5) == "0.5");
  CHECK(formatGoFloat(123456) == "123456");
  CHECK(formatGoFloat(1234567) == "1.234567e+06");
  CHECK(formatGoFloat(0.0001) == "0.0001");
  CHECK(formatGoFloat(0.00001) == "1e-05");
  CHECK(formatGoFloat(-1.5) == "-1.5");
}

TEST_CASE("comma lists split on commas and honour CSV quotes", "[flags]") {
  CHECK(parseCommaList("")->empty());
  CHECK(*parseCommaList("a") == std::vector<std::string>{"a"});
  CHECK(*parseCommaList("a,b,,c") == std::vector<std::string>{"a", "b", "", "c"});
  CHECK(*parseCommaList("a, b") == std::vector<std::string>{"a", " b"});
  CHECK(*parseCommaList("\"a,b\",\"say \"\"hi\"\"\"") ==
        std::vector<std::string>{"a,b", "say \"hi\""});
  CHECK_FALSE(parseCommaList("a\"b").ok());
  CHECK_FALSE(parseCommaList("\"ab").ok());
  CHECK_FALSE(parseCommaList("\"a\"b").ok());
}

TEST_CASE("feature gates start at koordlet's defaults", "[feature_gates]") {
  FeatureGates g;
  CHECK(g.known().size() == 39);
  CHECK(g.effective().size() == 39);
  for (const char* on : {"BECPUSuppress", "CPUBurst", "RdtResctrl", "NodeTopologyReport",
                         "GroupIdentity", "CPUSetAllocator", "BatchResource"}) {
    INFO(on);
    CHECK(g.enabled(on));
  }
  size_t onCount = 0;
  for (const auto& [name, on] : g.effective()) onCount += on ? 1 : 0;
  CHECK(onCount == 7);
  CHECK_FALSE(g.enabled("BECPUEvict"));
  CHECK_FALSE(g.enabled("OOMScoreAdj"));
  CHECK_FALSE(g.enabled("NoSuchGate"));
  for (const GateSpec& s : FeatureGates::known()) {
    INFO(s.name);
    CHECK((s.stage == GateStage::kBeta) == s.defaultOn);  // koordlet's beta gates default on
  }
}

TEST_CASE("the gate table marks as implemented exactly the gates this version reads",
          "[feature_gates]") {
  // The gates agent/agent.cpp passes on to a strategy, collector or hook; a gate
  // wired to a module joins this list in the same change.
  const std::vector<std::string> wired = {"BECPUSuppress",
                                          "CPUBurst",
                                          "RdtResctrl",
                                          "ResctrlCollector",
                                          "CgroupReconcile",
                                          "PSICollector",
                                          "BatchResource",
                                          "CPUSetAllocator",
                                          "BECPUEvict",
                                          "CPUEvict",
                                          "BEMemoryEvict",
                                          "MemoryEvict",
                                          "NodeTopologyReport",
                                          "GroupIdentity",
                                          "CPUNormalization",
                                          "Accelerators",
                                          "GPUEnvInject",
                                          "CPUAllocatableEvict",
                                          "MemoryAllocatableEvict",
                                          "OOMScoreAdj"};
  std::vector<std::string> implemented;
  for (const GateSpec& s : FeatureGates::known()) {
    if (s.implemented) implemented.push_back(s.name);
    CHECK(FeatureGates::implemented(s.name) == s.implemented);
  }
  std::vector<std::string> sortedWired = wired;
  std::sort(sortedWired.begin(), sortedWired.end());
  std::sort(implemented.begin(), implemented.end());
  CHECK(implemented == sortedWired);
  CHECK(FeatureGates::implemented("GroupIdentity"));
  CHECK_FALSE(FeatureGates::implemented("SystemConfig"));
  CHECK_FALSE(FeatureGates::implemented("NoSuchGate"));
}

TEST_CASE("only enabled gates without an implementation are listed as having no effect",
          "[feature_gates]") {
  FeatureGates g;
  // koordlet's defaults: every gate on by default acts here.
  CHECK(g.enabledNotImplemented().empty());
  REQUIRE(g.set("GroupIdentity=false,NodeTopologyReport=false,CgroupReconcile=true").ok());
  CHECK(g.enabledNotImplemented().empty());  // disabled gates are never listed
  REQUIRE(g.set("SystemConfig=true,Accelerators=true,BECPUEvict=true").ok());
  CHECK(g.enabledNotImplemented() == std::vector<std::string>{"SystemConfig"});
  FeatureGates all;
  REQUIRE(all.set("AllAlpha=true,AllBeta=true").ok());
  CHECK(all.enabledNotImplemented().size() == 19);  // 39 gates, 20 implemented
}

TEST_CASE("feature gates parse Kubernetes' Name=bool list", "[feature_gates]") {
  FeatureGates g;
  REQUIRE(g.set("BECPUEvict=true,BEMemoryEvict=true,CgroupReconcile=true,Accelerators=true").ok());
  CHECK(g.enabled("BECPUEvict"));
  CHECK(g.enabled("BEMemoryEvict"));
  CHECK(g.enabled("CgroupReconcile"));
  CHECK(g.enabled("Accelerators"));
  CHECK(g.enabled("BECPUSuppress"));  // untouched defaults stay
  REQUIRE(g.set(" CPUBurst = false ,, PSICollector=1, ").ok());
  CHECK_FALSE(g.enabled("CPUBurst"));
  CHECK(g.enabled("PSICollector"));
  CHECK(g.enabled("BECPUEvict"));  // earlier settings accumulate
  REQUIRE(g.set("").ok());
  CHECK(g.enabled("PSICollector"));
}

TEST_CASE("AllAlpha and AllBeta set the gates not named explicitly, in any order",
          "[feature_gates]") {
  for (const char* spec : {"AllAlpha=true,BECPUEvict=false", "BECPUEvict=false,AllAlpha=true"}) {
    FeatureGates g;
    INFO(spec);
    REQUIRE(g.set(spec).ok());
    CHECK_FALSE(g.enabled("BECPUEvict"));
    CHECK(g.enabled("AuditEvents"));
    CHECK(g.enabled("OOMScoreAdj"));
    CHECK(g.enabled("CPUBurst"));  // beta gates keep their default
  }
  FeatureGates beta;
  REQUIRE(beta.set("CPUBurst=true,AllBeta=false").ok());
  CHECK(beta.enabled("CPUBurst"));
  CHECK_FALSE(beta.enabled("BECPUSuppress"));
  CHECK_FALSE(beta.enabled("GroupIdentity"));
  CHECK_FALSE(beta.enabled("AuditEvents"));

  FeatureGates both;
  REQUIRE(both.set("AllAlpha=true,AllBeta=true").ok());
  for (const auto& [name, on] : both.effective()) {
    INFO(name);
    CHECK(on);
  }
  // An explicit setting from an earlier call still beats a later AllAlpha.
  FeatureGates later;
  REQUIRE(later.set("Accelerators=false").ok());
  REQUIRE(later.set("AllAlpha=true").ok());
  CHECK_FALSE(later.enabled("Accelerators"));
  CHECK(later.enabled("BECPUEvict"));
}

TEST_CASE("a bad feature gate spec is an error naming it and changes nothing", "[feature_gates]") {
  FeatureGates g;
  auto st = g.set("BECPUEvict=true,NoSuchGate=true");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message == "unrecognized feature gate \"NoSuchGate\"");
  CHECK_FALSE(g.enabled("BECPUEvict"));

  st = g.set("BECPUEvict=true,CPUBurst=yes");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message ==
        "invalid value \"yes\" for feature gate CPUBurst: want true or false");
  CHECK_FALSE(g.enabled("BECPUEvict"));
  CHECK(g.enabled("CPUBurst"));

  st = g.set("BECPUEvict");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message ==
        "malformed feature gate item \"BECPUEvict\": want Name=true or Name=false");
  CHECK_FALSE(g.set("becpuevict=true").ok());  // names are case-sensitive, as in Kubernetes
  CHECK_FALSE(g.set("AllAlpha=maybe").ok());
  CHECK(g.effective() == FeatureGates().effective());
}

}  // namespace test_agent_flags
