// A cgroupfs-driver kubepods tree for the agent's e2e tests, in plain directories
// under a temp dir (<root>/<controller>/kubepods/...): the QoS dirs, and at the
// kubepods root the knob files the agent probes at start (so the executor counts
// cpu.shares, the cfs quota and the memory limit as supported here).
#pragma once

#include <filesystem>
#include <string>

#include "tests/support/temp_tree.h"

namespace koord::test {

inline void makeFakeKubepodsV1(const TempTree& tmp, const std::string& root = "cgroup") {
  for (const char* d :
       {"/cpu/kubepods/besteffort", "/cpu/kubepods/burstable", "/cpuset/kubepods",
        "/cpuacct/kubepods", "/memory/kubepods/besteffort", "/memory/kubepods/burstable"}) {
    std::filesystem::create_directories(tmp.path(root + d));
  }
  tmp.write(root + "/cpu/kubepods/cpu.shares", "1024\n");
  tmp.write(root + "/cpu/kubepods/cpu.cfs_quota_us", "-1\n");
  tmp.write(root + "/cpu/kubepods/cpu.cfs_period_us", "100000\n");
  tmp.write(root + "/memory/kubepods/memory.limit_in_bytes", "9223372036854771712\n");
}

}  // namespace koord::test
