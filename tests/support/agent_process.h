// AgentProcess: the real koordlet binary as a child process of an end-to-end test
// or benchmark, with its stdout and stderr in a log file the test reads.
//
// posix_spawn rather than fork: the tests that start it have threads (the kubelet
// stand-in, counter writers), and after fork only async-signal-safe calls are
// allowed. The destructor SIGKILLs and reaps the agent if it still runs, so a
// failed assertion leaves no agent behind. Set-up failures throw: this is test
// code.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace koord::test {

class AgentProcess {
 public:
  // Starts `binary flags...` with stdin from /dev/null, stdout and stderr to
  // `logPath`, and our environment minus NODE_NAME, NODE_IP and agent_mode, plus
  // NODE_NAME=nodeName. Throws std::runtime_error when it cannot be started.
  AgentProcess(const std::string& binary, const std::vector<std::string>& flags,
               std::string logPath, const std::string& nodeName);

  // As a container runtime starts a pre-installed NRI plugin: exactly `env` as the
  // environment (no PATH, HOME, ...), `socketFd` as the child's fd 3, stdin from
  // /dev/null, stdout and stderr to `logPath` (the runtime uses /dev/null; the test
  // wants the log).
  struct Launched {
    std::vector<std::string> env;
    int socketFd = -1;
  };
  AgentProcess(const std::string& binary, const std::vector<std::string>& flags,
               std::string logPath, const Launched& launched);
  ~AgentProcess();
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& logPath() const { return logPath_; }
  // The whole log so far.
  std::string log() const;

  // Whether it still runs; reaps it (keeping its status) once it has exited.
  bool running();

  // The port of the start line "... serving on <addr> (port N), ...", polled until
  // it appears, the agent exits, or `limit` passes (then nullopt).
  std::optional<uint16_t> waitForServingPort(std::chrono::milliseconds limit);

  // Sends SIGTERM and waits up to `limit`: the waitpid status, or nullopt if it
  // is still running then.
  std::optional<int> terminate(std::chrono::milliseconds limit);

 private:
  void spawn(const std::string& binary, const std::vector<std::string>& flags,
             std::vector<std::string> env, int fd3);

  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string logPath_;
};

// The whole content of a text file; "" when it cannot be read.
std::string readTextFile(const std::string& path);

// The port of the agent's start line in `log`, if the line is there yet.
std::optional<uint16_t> servingPort(const std::string& log);

}  // namespace koord::test
