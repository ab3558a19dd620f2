#include "metrics/gpu_health.h"

namespace koord {

bool isApplicationXid(uint64_t xid) {
  return xid == 13 || xid == 31 || xid == 43 || xid == 45 || xid == 68;
}

GpuHealthWatcher::GpuHealthWatcher(std::unique_ptr<GpuEventWatch> watch, Deliver deliver,
                                   std::chrono::milliseconds wait)
    : watch_(std::move(watch)), deliver_(std::move(deliver)), wait_(wait) {
  thread_ = std::thread([this] { run(); });
}

GpuHealthWatcher::~GpuHealthWatcher() { stop(); }

void GpuHealthWatcher::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool GpuHealthWatcher::pause(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stopping_; });
}

void GpuHealthWatcher::run() {
  const auto timeoutMs = static_cast<unsigned>(wait_.count());
  for (;;) {
    auto next = watch_->wait(timeoutMs);
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    if (!next) {
      deliver_(next.error());
      if (!pause(wait_ * 10)) return;
      continue;
    }
    if (!next->has_value()) continue;
    const bool unnamed = (*next)->uuid.empty();
    deliver_(std::move(**next));
    if (unnamed && !pause(wait_)) return;
  }
}

}  // namespace koord
