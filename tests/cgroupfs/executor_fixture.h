// The executor tests' throw-away v1 tree (a cgroupfs-driver tree: kubepods, its
// BestEffort class, one pod, one container), ManualClock and helpers to build writes.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/read_file.h"
#include "cgroupfs/executor.h"
#include "tests/support/temp_tree.h"

namespace koord::test {

namespace fs = std::filesystem;

inline const std::string kPod = "kubepods/besteffort/pod1";
inline const std::string kCtr = "kubepods/besteffort/pod1/c1";

// A v1 cgroupfs-driver tree: kubepods, its BestEffort class, one pod, one container.
struct Fixture {
  Fixture() {
    Logger::setGlobal(log, clock, 0);
    for (const std::string& dir :
         std::vector<std::string>{"kubepods", "kubepods/besteffort", kPod, kCtr}) {
      tree.write("cpu/" + dir + "/cpu.shares", "1024\n");
      tree.write("cpu/" + dir + "/cpu.cfs_quota_us", "-1\n");
      tree.write("cpuset/" + dir + "/cpuset.cpus", "0-7\n");
      tree.write("memory/" + dir + "/memory.limit_in_bytes", "9223372036854771712\n");
    }
    tree.write("cpu/kubepods-other/cpu.shares", "1024\n");
    tree.write("cpu/other/cpu.shares", "1024\n");
    config.cgroupRoot = tree.path();
    config.auditPath = tree.path("audit/executor.log");
  }
  ~Fixture() {
    static SystemClock system;
    Logger::setGlobal(std::cerr, system, 0);
  }
  Executor& executor() {
    if (!exec) {
      exec = std::make_unique<Executor>(config,
                                        CgroupLayout(CgroupVersion::kV1, CgroupDriver::kCgroupfs),
                                        KnobSupport::all(), clock, failures);
      exec->onWrite([this](const char* status, double) { statuses.emplace_back(status); });
    }
    return *exec;
  }
  std::string file(const std::string& rel) {
    auto text = readFile(tree.path(rel));
    REQUIRE(text.ok());
    return *text;
  }
  size_t logLines() const {
    const std::string s = log.str();
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  }
  std::vector<nlohmann::json> audit(const std::string& path = "") {
    std::vector<nlohmann::json> out;
    auto text = readFile(path.empty() ? config.auditPath : path);
    if (!text) return out;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  std::vector<std::string> auditPaths() {
    std::vector<std::string> out;
    for (const auto& e : audit()) {
      out.push_back(fs::relative(e["path"].get<std::string>(), tree.path()).string() + "=" +
                    e["new"].get<std::string>());
    }
    return out;
  }

  ManualClock clock;
  std::ostringstream log;
  FailureLog failures{clock};
  test::TempTree tree;
  ExecutorConfig config;
  std::unique_ptr<Executor> exec;
  std::vector<std::string> statuses;
};

inline CgroupWrite quota(const std::string& dir, int64_t q,
                         const std::string& owner = "cpusuppress") {
  return CgroupWrite{dir, Knob::kCpuQuota, KnobValue::of(q), owner};
}
inline CgroupWrite cpus(const std::string& dir, std::vector<int> c,
                        const std::string& owner = "cpuset") {
  return CgroupWrite{dir, Knob::kCpusetCpus, KnobValue::ofCpus(std::move(c)), owner};
}
inline CgroupWrite shares(const std::string& dir, int64_t s,
                          const std::string& owner = "cpusuppress") {
  return CgroupWrite{dir, Knob::kCpuShares, KnobValue::of(s), owner};
}

}  // namespace koord::test
