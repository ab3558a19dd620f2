// koordlet: entry point. The only place that reads the environment and sysconf;
// everything below gets what it needs as values.
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdlib>
#include <iostream>
#include <utility>

#include <google/protobuf/stubs/logging.h>
#include <boost/asio/io_context.hpp>

#include "agent/agent.h"
#include "agent/explain_command.h"
#include "agent/options.h"
#include "agent/restore_command.h"
#include "base/log.h"
#include "qos/config_watcher.h"
#include "version.h"

namespace {

// libprotobuf's own complaints (a runtime or proxy message with a string that is not
// UTF-8 is refused by the caller, and libprotobuf also prints a line for each) go
// through our log, the 1st, 2nd, 4th, 8th, ... only: a peer that repeats a bad
// message cannot flood the log.
void protobufLog(google::protobuf::LogLevel level, const char* file, int line,
                 const std::string& message) {
  static std::atomic<uint64_t> count{0};
  const uint64_t n = count.fetch_add(1, std::memory_order_relaxed) + 1;
  if (!std::has_single_bit(n)) return;
  const auto severity = level >= google::protobuf::LOGLEVEL_ERROR ? koord::Severity::kWarning
                                                                  : koord::Severity::kInfo;
  koord::logEachLine(severity,
                     "libprotobuf (" + std::to_string(n) + " messages so far) " + file + ":" +
                         std::to_string(line) + ": ",
                     message);
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Subcommands: the operator's tools, beside the agent they talk to.
  if (!args.empty() && args[0] == "explain") {
    return koord::runExplainCommand({args.begin() + 1, args.end()}, std::cout, std::cerr);
  }
  koord::Environment environment{env("NODE_NAME"),
                                 env("NODE_IP"),
                                 env("agent_mode"),
                                 hostname(),
                                 env("NRI_PLUGIN_SOCKET"),
                                 env("NRI_PLUGIN_IDX"),
                                 env("NRI_PLUGIN_NAME"),
                                 env("KUBERNETES_SERVICE_HOST"),
                                 env("KUBERNETES_SERVICE_PORT")};

  // `koordlet restore <the agent's flags>` (agent/restore_command.h).
  const bool restore = !args.empty() && args[0] == "restore";
  if (restore) args.erase(args.begin());
  if (restore && args.empty()) {
    // No flags: the running agent's own (in its pod, `kubectl exec ... koordlet restore`).
    const std::vector<pid_t> agents = koord::runningAgents();
    if (agents.size() != 1) {
      std::cerr << "koordlet restore: no flags given and " << agents.size()
                << " running agents found: give the agent's flags\n";
      return 2;
    }
    auto found = koord::agentArgs(agents.front());
    if (!found) {
      std::cerr << "koordlet restore: " << found.error().message << "\n";
      return 2;
    }
    args = std::move(*found);
    std::cout << "using the flags of the running agent (pid " << agents.front() << ")\n";
  }
  auto parsed = koord::parseOptions(args, environment);
  if (!parsed) {
    std::cerr << "koordlet: " << parsed.error().message << "\n"
              << "Run 'koordlet --help' for the list of flags.\n";
    return 2;
  }
  koord::Options opts = std::move(parsed).value();
  if (opts.showHelp) {
    std::cout << koord::usageText();
    return 0;
  }
  if (opts.showVersion) {
    std::cout << koord::versionLine(KOORDLET_RELEASE, KOORDLET_VERSION) << "\n";
    return 0;
  }

  static const koord::SystemClock clock;
  if (restore) {
    koord::Logger::setGlobal(std::cerr, clock, opts.verbosity);
    long page = ::sysconf(_SC_PAGESIZE);
    return koord::runRestore(opts, clock, page > 0 ? page : 4096, std::cout, std::cerr);
  }
  if (opts.checkOnly) {
    // Everything the agent would refuse at start, and nothing it would do after.
    std::cout << "flags: ok\n";
    for (const auto& line : koord::ineffectiveSettings(opts)) {
      std::cout << "warning: " << line << "\n";
    }
    if (opts.configFile.empty()) {
      std::cout << "config: none (--config not given): koordlet's defaults\n";
      return 0;
    }
    koord::ConfigWatcher config(opts.configFile, clock);
    if (auto st = config.load(); !st) {
      std::cerr << "koordlet: " << st.error().message << "\n";
      return 2;
    }
    std::cout << "config: " << opts.configFile << ": ok\n" << config.toJson().dump(2) << "\n";
    return 0;
  }
  koord::Logger::setGlobal(std::cerr, clock, opts.verbosity);
  google::protobuf::SetLogHandler(&protobufLog);
  koord::logStartSettings(opts);
  if (auto advice =
          koord::hostModeKubeletAdvice(opts, ::access(opts.kubeletTokenFile.c_str(), F_OK) == 0);
      !advice.empty()) {
    KLOG_WARNING << advice;
  }

  koord::SystemInfo sys;
  if (long t = ::sysconf(_SC_CLK_TCK); t > 0) sys.ticksPerSecond = t;
  if (long p = ::sysconf(_SC_PAGESIZE); p > 0) sys.pageSize = p;

  boost::asio::io_context io(1);
  koord::Agent agent(io, std::move(opts), clock, sys);
  if (auto st = agent.start(); !st) {
    // A --config file with several problems: one line each.
    koord::logEachLine(koord::Severity::kError, "cannot start: ", st.error().message);
    return 1;
  }
  io.run();
  KLOG_INFO << "stopped";
  return 0;
}
