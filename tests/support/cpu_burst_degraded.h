// CPU burst's degraded form, for the real-kernel tests: on a kernel without the burst
// file (Linux before 5.14; the rig boots 5.10) the probe finds no burst knob, and a burst
// write through the executor is counted unsupported with no file made. A kernel of 5.14
// or later without the file fails here rather than passing as "too old".
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "cgroupfs/executor.h"
#include "tests/support/kernel_release.h"
#include "tests/support/log_capture.h"

namespace koord::test {

inline void checkCpuBurstUnsupported(const std::string& cgroupRoot, const CgroupLayout& layout,
                                     const std::string& dir, const std::string& burstFile) {
  INFO("no CPU burst file at " << burstFile);
  REQUIRE_FALSE(kernelHasCpuBurst());
  LogCapture log;
  ExecutorConfig config;
  config.cgroupRoot = cgroupRoot;
  const KnobSupport support = KnobSupport::probe(cgroupRoot, layout);
  CHECK_FALSE(support.has(Knob::kCpuBurst));
  Executor exec(config, layout, support, log.clock, log.failures);
  const ExecutorStats s =
      exec.apply({CgroupWrite{dir, Knob::kCpuBurst, KnobValue::of(50000), "test"}});
  CHECK(s.unsupported == 1);
  CHECK(s.written == 0);
  CHECK_FALSE(std::filesystem::exists(burstFile));
}

}  // namespace koord::test
