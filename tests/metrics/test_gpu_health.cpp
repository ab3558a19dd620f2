// A GPU's health from the driver's events (metrics/gpu_health.h): which events make
// a GPU unhealthy, and the thread that waits for them. The driver's side is a
// double with a queue; the watcher's own thread runs for real, and the test waits
// on what it hands over (no sleep).
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "metrics/gpu_health.h"

namespace test_metrics_gpu_health {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace std::chrono_literals;

namespace {

// The driver's events as a queue the test fills; wait() blocks as NVML's does.
class QueuedEvents final : public GpuEventWatch {
 public:
  Result<std::optional<GpuHealthEvent>> wait(unsigned timeoutMs) override {
    std::unique_lock lock(mu_);
    ++waits_;
    cv_.notify_all();
    if (!cv_.wait_for(lock, std::chrono::milliseconds(timeoutMs),
                      [&] { return !queue_.empty(); })) {
      return std::optional<GpuHealthEvent>();
    }
    auto next = std::move(queue_.front());
    queue_.pop_front();
    return next;
  }
  void push(Result<std::optional<GpuHealthEvent>> next) {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(next));
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Result<std::optional<GpuHealthEvent>>> queue_;
  int waits_ = 0;
};

// What the watcher hands over, as the agent's loop would receive it.
struct Received {
  void add(Result<GpuHealthEvent> r) {
    std::lock_guard lock(mu);
    items.push_back(std::move(r));
    cv.notify_all();
  }
  bool waitFor(size_t n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 30s, [&] { return items.size() >= n; });
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Result<GpuHealthEvent>> items;
};

}  // namespace

TEST_CASE("application Xids leave a GPU healthy; other Xids, ECC and a lost GPU do not",
          "[gpu][health]") {
  for (uint64_t xid : {13, 31, 43, 45, 68}) {
    CHECK(isApplicationXid(xid));
    CHECK_FALSE(isCritical({"GPU-a", xid, "Xid " + std::to_string(xid)}));
  }
  for (uint64_t xid : {48, 63, 64, 74, 79, 92, 94, 95, 999}) {
    CHECK(isCritical({"GPU-a", xid, "Xid " + std::to_string(xid)}));
  }
  CHECK(isCritical({"GPU-a", 0, "double-bit ECC error"}));
  CHECK(isCritical({"", 0, "GPU lost"}));
}

TEST_CASE("the watcher hands each event and error over from its own thread, then stops",
          "[gpu][health]") {
  auto owned = std::make_unique<QueuedEvents>();
  QueuedEvents& events = *owned;
  Received got;
  {
    GpuHealthWatcher watcher(
        std::move(owned), [&](Result<GpuHealthEvent> r) { got.add(std::move(r)); }, 1ms);
    events.push(std::optional<GpuHealthEvent>(GpuHealthEvent{"GPU-a", 79, "Xid 79"}));
    events.push(makeError("NVML nvmlEventSetWait_v2: Unknown Error (999)"));
    // After an error the watcher pauses (ten waits), then reads on.
    events.push(std::optional<GpuHealthEvent>(GpuHealthEvent{"", 0, "GPU lost"}));
    events.push(std::optional<GpuHealthEvent>(GpuHealthEvent{"GPU-b", 13, "Xid 13"}));
    REQUIRE(got.waitFor(4));
    watcher.stop();
    // Whatever comes after stop() is not handed over.
    events.push(std::optional<GpuHealthEvent>(GpuHealthEvent{"GPU-a", 48, "Xid 48"}));
  }
  REQUIRE(got.items.size() == 4);
  CHECK(*got.items[0] == GpuHealthEvent{"GPU-a", 79, "Xid 79"});
  REQUIRE_FALSE(got.items[1].ok());
  CHECK(got.items[1].error().message == "NVML nvmlEventSetWait_v2: Unknown Error (999)");
  CHECK(*got.items[2] == GpuHealthEvent{"", 0, "GPU lost"});
  CHECK(*got.items[3] == GpuHealthEvent{"GPU-b", 13, "Xid 13"});
}

TEST_CASE("a watcher stopped while the driver waits returns after that wait", "[gpu][health]") {
  auto owned = std::make_unique<QueuedEvents>();
  QueuedEvents& events = *owned;
  Received got;
  GpuHealthWatcher watcher(
      std::move(owned), [&](Result<GpuHealthEvent> r) { got.add(std::move(r)); }, 5ms);
  {
    std::unique_lock lock(events.mu_);
    REQUIRE(events.cv_.wait_for(lock, 30s, [&] { return events.waits_ >= 2; }));
  }
  watcher.stop();
  watcher.stop();  // again: nothing
  CHECK(got.items.empty());
}

}  // namespace test_metrics_gpu_health
