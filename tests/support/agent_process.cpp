#include "tests/support/agent_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace koord::test {
namespace {

// Sets FD_CLOEXEC on every descriptor above 2 except `keep`.
void markInheritedCloseOnExec(int keep) {
  std::vector<int> fds;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const int fd = std::atoi(entry.path().filename().c_str());
    if (fd > 2 && fd != keep) fds.push_back(fd);
  }
  for (int fd : fds) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

}  // namespace

using namespace std::chrono_literals;

AgentProcess::AgentProcess(const std::string& binary, const std::vector<std::string>& flags,
                           std::string logPath, const std::string& nodeName)
    : logPath_(std::move(logPath)) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view v(*e);
    if (v.starts_with("NODE_NAME=") || v.starts_with("NODE_IP=") || v.starts_with("agent_mode=")) {
      continue;
    }
    env.emplace_back(v);
  }
  env.push_back("NODE_NAME=" + nodeName);
  spawn(binary, flags, std::move(env), -1);
}

AgentProcess::AgentProcess(const std::string& binary, const std::vector<std::string>& flags,
                           std::string logPath, const Launched& launched)
    : logPath_(std::move(logPath)) {
  spawn(binary, flags, launched.env, launched.socketFd);
}

void AgentProcess::spawn(const std::string& binary, const std::vector<std::string>& flags,
                         std::vector<std::string> env, int fd3) {
  std::vector<std::string> args{binary};
  args.insert(args.end(), flags.begin(), flags.end());
  // The runtime proxy's hook server is on by default, with a pod's paths
  // (/host-var-run-koordlet, /host-etc-hookserver): a test that does not name
  // them gets them beside its log, not at the machine's root.
  const bool namesHookServer = std::any_of(flags.begin(), flags.end(), [](const std::string& f) {
    return f.find("runtime-hooks-addr") != std::string::npos ||
           f.find("enable-runtime-hook-server") != std::string::npos;
  });
  // Only for the agent: the class also starts other programs (a Prometheus).
  const bool isAgent = std::filesystem::path(binary).filename() == "koordlet";
  if (isAgent && !namesHookServer) {
    const std::string dir = std::filesystem::path(logPath_).parent_path().string();
    args.push_back("--runtime-hooks-addr=" + (dir.empty() ? "." : dir) + "/koordlet-hooks.sock");
    args.push_back("--runtime-hooks-config-path=" + (dir.empty() ? "." : dir) + "/hookserver.d");
  }
  auto pointers = [](std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  };
  auto argv = pointers(args);
  auto envp = pointers(env);

  // dup2 onto the same number would keep the descriptor's close-on-exec flag.
  int source = fd3;
  if (fd3 == 3) source = ::fcntl(fd3, F_DUPFD_CLOEXEC, 10);
  // The test's own descriptors (a stand-in's listening socket: Asio opens sockets
  // without SOCK_CLOEXEC) must not leak into the agent: a leaked listener keeps its
  // port bound after the stand-in closes it, so it cannot listen there again.
  markInheritedCloseOnExec(source);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, 1, logPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
  ::posix_spawn_file_actions_adddup2(&actions, 1, 2);
  if (source >= 0) ::posix_spawn_file_actions_adddup2(&actions, source, 3);
  const int err = ::posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  if (source >= 0 && source != fd3) ::close(source);
  if (err != 0) {
    pid_ = -1;
    throw std::runtime_error("cannot start " + binary + ": " + std::strerror(err));
  }
}

AgentProcess::~AgentProcess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string AgentProcess::log() const { return readTextFile(logPath_); }

bool AgentProcess::running() {
  if (pid_ <= 0 || status_) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    status_ = status;
    return false;
  }
  return true;
}

std::optional<uint16_t> AgentProcess::waitForServingPort(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (auto port = servingPort(log())) return port;
    if (!running() || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
}

std::optional<int> AgentProcess::terminate(std::chrono::milliseconds limit) {
  if (running()) ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  return status_;
}

std::string readTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::optional<uint16_t> servingPort(const std::string& log) {
  auto at = log.find("serving on ");
  if (at == std::string::npos) return std::nullopt;
  at = log.find("(port ", at);
  if (at == std::string::npos) return std::nullopt;
  at += 6;
  auto end = log.find(')', at);
  if (end == std::string::npos || end == at) return std::nullopt;
  const int port = std::atoi(log.substr(at, end - at).c_str());
  if (port <= 0 || port > 65535) return std::nullopt;
  return static_cast<uint16_t>(port);
}

}  // namespace koord::test
