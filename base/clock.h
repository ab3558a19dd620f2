// Clock: the injectable source of time. Rates and log-suppression windows use it,
// so unit tests advance time by hand and never sleep.
#pragma once

#include <chrono>

namespace koord {

class Clock {
 public:
  using Monotonic = std::chrono::steady_clock::time_point;
  using Wall = std::chrono::system_clock::time_point;
  virtual ~Clock() = default;
  virtual Monotonic now() const = 0;
  virtual Wall wallNow() const = 0;
};

class SystemClock final : public Clock {
 public:
  Monotonic now() const override { return std::chrono::steady_clock::now(); }
  Wall wallNow() const override { return std::chrono::system_clock::now(); }
};

// For tests: time moves only when advance() is called.
class ManualClock final : public Clock {
 public:
  Monotonic now() const override { return mono_; }
  Wall wallNow() const override { return wall_; }
  void advance(std::chrono::nanoseconds d) {
    mono_ += d;
    wall_ += std::chrono::duration_cast<Wall::duration>(d);
  }

 private:
  Monotonic mono_{std::chrono::seconds(1000)};
  Wall wall_{std::chrono::seconds(1'700'000'000)};
};

}  // namespace koord
