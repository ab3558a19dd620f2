// runUntil, runsOutOfWork: how the kube tests drive a client's io_context here, on
// the test thread, against a server on its own thread. Every run is bounded, so no
// test can hang; the bounds are real time and wide enough for a loaded 2-core
// machine (kWaitBound is far beyond every deadline the tests use).
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <thread>

namespace koord::test {

inline constexpr std::chrono::seconds kWaitBound{20};

// Runs io until done() or the bound; true if done. When io is out of work the
// condition is the other thread's to make true, so it naps briefly and looks again.
inline bool runUntil(boost::asio::io_context& io, const std::function<bool()>& done,
                     std::chrono::steady_clock::duration bound = kWaitBound) {
  using namespace std::chrono_literals;
  const auto end = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    if (io.stopped()) io.restart();
    if (io.run_one_for(50ms) == 0 && io.stopped()) std::this_thread::sleep_for(5ms);
  }
  return true;
}

// Runs io until nothing is left to do; false if work remains after the bound.
inline bool runsOutOfWork(boost::asio::io_context& io,
                          std::chrono::steady_clock::duration bound = std::chrono::seconds(5)) {
  io.restart();
  io.run_for(bound);
  return io.stopped();
}

}  // namespace koord::test
