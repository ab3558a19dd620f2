// waitFor: how end-to-end tests wait on a real process in real time. Every wait
// is a poll with a deadline, never a fixed sleep, so a fast machine is not slowed
// and a loaded one gets the whole limit.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace koord::test {

// Polls `check` every `every` until it returns "" (satisfied) or `limit` passes;
// returns "" or the last reason it gave. A check that knows it can never succeed
// (the agent exited) should fail the test itself, which ends the wait.
inline std::string waitFor(std::chrono::milliseconds limit,
                           const std::function<std::string()>& check,
                           std::chrono::milliseconds every = std::chrono::milliseconds(100)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    std::string why = check();
    if (why.empty() || std::chrono::steady_clock::now() >= deadline) return why;
    std::this_thread::sleep_for(every);
  }
}

}  // namespace koord::test
