// A GPU's health from the driver's critical-error events (gate Accelerators): the
// judgement of an event, and the thread that waits for them.
//
// As koordlet (and NVIDIA's device plugin): an Xid event marks its GPU unhealthy
// unless the Xid is one an application causes (13 graphics engine exception,
// 31 memory page fault, 43 GPU stopped processing, 45 preemptive cleanup, 68 video
// processor exception: the GPU still works); a double-bit ECC error marks it too;
// an event that names no GPU, and a GPU lost from the bus, mark them all. A GPU
// stays unhealthy until the agent restarts (the driver never says it recovered;
// such GPUs need a reset, which restarts the node's GPU stack).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "base/result.h"
#include "gpu/gpu_library.h"

namespace koord {

// An Xid an application causes: counted, the GPU stays healthy.
bool isApplicationXid(uint64_t xid);

// Whether an event makes a GPU unhealthy.
inline bool isCritical(const GpuHealthEvent& e) { return e.xid == 0 || !isApplicationXid(e.xid); }

// Waits for the driver's events on its own thread (the driver's wait blocks) and
// hands each to `deliver`, on that thread: the agent posts it to its loop. An
// error from the driver is handed over too, then the watcher pauses (10 waits'
// time) before it waits again; so does an event naming no GPU (a lost GPU can be
// said at every wait).
class GpuHealthWatcher {
 public:
  using Deliver = std::function<void(Result<GpuHealthEvent>)>;
  GpuHealthWatcher(std::unique_ptr<GpuEventWatch> watch, Deliver deliver,
                   std::chrono::milliseconds wait = std::chrono::seconds(1));
  ~GpuHealthWatcher();  // stop()
  GpuHealthWatcher(const GpuHealthWatcher&) = delete;
  GpuHealthWatcher& operator=(const GpuHealthWatcher&) = delete;

  // Returns once the thread has ended: within one wait (the driver's wait cannot be
  // interrupted). Nothing is delivered after it returns.
  void stop();

 private:
  void run();
  bool pause(std::chrono::milliseconds d);  // false when stopping

  std::unique_ptr<GpuEventWatch> watch_;
  Deliver deliver_;
  std::chrono::milliseconds wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace koord
