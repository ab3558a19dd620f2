#include "agent/agent.h"

#include <boost/asio/connect.hpp>
#include <csignal>
#include <sstream>

#include "agent/read_file.h"
#include "metrics/proc_parsers.h"
#include "version.h"

namespace koord {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// The node collector's "Last" window in koordlet is 2× the interval; a failure
// that lasts longer than that is worth a reminder line every 10 minutes, no more.
constexpr auto kReminderEvery = std::chrono::minutes(10);

// "<path>: <reason>" -> "<path>", so one failing file is one streak however its
// reason text varies.
std::string failureKey(const std::string& message) {
  auto colon = message.find(": ");
  return colon == std::string::npos ? message : message.substr(0, colon);
}

double unixSeconds(Clock::Wall t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace

Agent::Agent(asio::io_context& io, Options options, const Clock& clock, SystemInfo sys)
    : io_(io),
      opts_(std::move(options)),
      clock_(&clock),
      sys_(sys),
      server_(io, HttpLimits{}),
      exporter_(opts_.nodeName, KOORDLET_VERSION),
      nodeCollector_(opts_.paths, clock, sys.ticksPerSecond),
      failures_(clock, kReminderEvery),
      collectTimer_(io),
      kubeletTimer_(io),
      kubeletDeadline_(io),
      signals_(io, SIGINT, SIGTERM) {}

Status Agent::start() {
  if (!opts_.configFile.empty()) {
    // The NodeSLO strategies that read it arrive with the QoS engine; an unreadable
    // file is still an operator error worth refusing at start.
    auto text = readFile(opts_.configFile);
    if (!text) return makeError("--config: " + text.error().message);
  }

  uint64_t bootTime = 0;
  std::string statPath = opts_.paths.proc("stat");
  if (auto text = readFile(statPath)) {
    if (auto stat = parseProcStat(*text)) bootTime = stat->bootTimeSeconds;
  }
  selfCollector_ =
      std::make_unique<SelfCollector>(opts_.paths, sys_.ticksPerSecond, sys_.pageSize, bootTime);

  server_.route("/metrics", [this] { return serveMetrics(); });
  server_.route("/healthz", [] { return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"}; });
  server_.route("/readyz", [this] { return serveReadyz(); });
  if (auto st = server_.listen(opts_.addr); !st) return st;

  exporter_.setStartTime(unixSeconds(clock_->wallNow()));
  exporter_.setKubeletUp(false);

  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    KLOG_INFO << "received signal " << sig << ", shutting down";
    stop();
  });

  KLOG_INFO << "koordlet " << KOORDLET_VERSION << " serving on " << opts_.addr << " (port "
            << server_.port() << "), node " << opts_.nodeName << ", proc root "
            << opts_.paths.procRoot << ", cgroup root " << opts_.paths.cgroupRoot
            << (opts_.dryRun ? ", dry-run: nothing will be written to the kernel" : "");

  nextCollect_ = std::chrono::steady_clock::now();
  collectOnce();
  scheduleCollect();
  if (opts_.kubeletSyncInterval.count() > 0) scheduleKubeletProbe(std::chrono::nanoseconds(0));
  return Ok{};
}

void Agent::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  collectTimer_.cancel();
  kubeletTimer_.cancel();
  kubeletDeadline_.cancel();
  if (resolver_) resolver_->cancel();
  if (kubeletSocket_) kubeletSocket_->close(ignored);
  server_.stop();
}

// Fixed-rate schedule: the next round is due one interval after the previous due
// time, so collection does not drift by its own duration.
void Agent::scheduleCollect() {
  if (stopped_) return;
  auto interval =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(opts_.collectResUsedInterval);
  nextCollect_ += interval;
  auto now = std::chrono::steady_clock::now();
  if (nextCollect_ < now) nextCollect_ = now;  // we fell behind: skip, don't burst
  collectTimer_.expires_at(nextCollect_);
  collectTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    collectOnce();
    scheduleCollect();
  });
}

void Agent::collectOnce() {
  auto begin = clock_->now();
  auto outcome = nodeCollector_.collect();
  double seconds = std::chrono::duration<double>(clock_->now() - begin).count();

  exporter_.recordNode(outcome.sample);
  exporter_.recordCollector("node", seconds, outcome.errors.size());
  if (nodeCollector_.psiSupport() != Support::kUnknown) {
    exporter_.setFeatureSupported("psi", nodeCollector_.psiSupport() == Support::kSupported);
  }

  // One streak per file: a file that keeps failing logs once, then a count.
  static const std::string kFiles[] = {"stat",         "meminfo",         "loadavg",
                                       "pressure/cpu", "pressure/memory", "pressure/io"};
  for (const auto& e : outcome.errors) {
    failures_.failure(failureKey(e.message), Severity::kError, "node collector: " + e.message);
  }
  for (const auto& f : kFiles) {
    std::string path = opts_.paths.proc(f);
    bool failed = false;
    for (const auto& e : outcome.errors) failed = failed || failureKey(e.message) == path;
    if (!failed) failures_.success(path);
  }

  if (outcome.complete && !ready_) {
    ready_ = true;
    KLOG_INFO << "first full node collection done: ready";
  }
}

std::string Agent::kubeletHost() const {
  if (!opts_.kubeletAddr.empty()) return opts_.kubeletAddr;
  if (!opts_.nodeIp.empty()) return opts_.nodeIp;
  return "127.0.0.1";
}

uint16_t Agent::kubeletPort() const {
  return static_cast<uint16_t>(opts_.kubeletInsecureTls ? opts_.kubeletReadOnlyPort
                                                        : opts_.kubeletSecurePort);
}

void Agent::scheduleKubeletProbe(std::chrono::nanoseconds delay) {
  if (stopped_) return;
  kubeletTimer_.expires_after(delay);
  kubeletTimer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    probeKubelet();
  });
}

// Until the kubelet client lands (pods issue), the agent checks only that the
// kubelet endpoint accepts TCP connections, so an operator learns once, at start,
// that pod metrics are unavailable while node metrics go on.
void Agent::probeKubelet() {
  std::string host = kubeletHost();
  std::string endpoint = host + ":" + std::to_string(kubeletPort());
  resolver_ = std::make_unique<tcp::resolver>(io_);
  kubeletSocket_ = std::make_unique<tcp::socket>(io_);
  kubeletDeadline_.expires_after(opts_.kubeletSyncTimeout);
  kubeletDeadline_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: the probe finished first
    if (resolver_) resolver_->cancel();
    boost::system::error_code ignored;
    if (kubeletSocket_) kubeletSocket_->close(ignored);
  });
  auto onConnect = [this, endpoint](const boost::system::error_code& cec) {
    if (stopped_) return;
    kubeletProbeDone(endpoint, cec);
  };
  // An IP literal (the usual NODE_IP) connects directly: Asio resolves names on a
  // helper thread, which this single-threaded agent avoids when it can.
  boost::system::error_code addrError;
  auto address = asio::ip::make_address(host, addrError);
  if (!addrError) {
    kubeletSocket_->async_connect(tcp::endpoint(address, kubeletPort()), onConnect);
    return;
  }
  resolver_->async_resolve(
      host, std::to_string(kubeletPort()),
      [this, endpoint](const boost::system::error_code& ec, tcp::resolver::results_type results) {
        if (stopped_) return;
        if (ec) {
          kubeletProbeDone(endpoint, ec);
          return;
        }
        asio::async_connect(
            *kubeletSocket_, results,
            [this, endpoint](const boost::system::error_code& cec, const tcp::endpoint&) {
              if (stopped_) return;
              kubeletProbeDone(endpoint, cec);
            });
      });
}

void Agent::kubeletProbeDone(const std::string& endpoint, boost::system::error_code ec) {
  kubeletDeadline_.cancel();
  boost::system::error_code ignored;
  kubeletSocket_->close(ignored);
  const std::string key = "kubelet " + endpoint;
  bool up = !ec;
  if (up) {
    failures_.success(key);
    if (!kubeletProbed_ || !kubeletUp_) KLOG_INFO << "kubelet reachable at " << endpoint;
  } else {
    std::string reason = ec == asio::error::operation_aborted ? "timed out" : ec.message();
    failures_.failure(key, Severity::kWarning,
                      "kubelet at " + endpoint + " unreachable (" + reason +
                          "): pods are unavailable, node metrics continue");
  }
  kubeletUp_ = up;
  kubeletProbed_ = true;
  exporter_.setKubeletUp(up);
  scheduleKubeletProbe(opts_.kubeletSyncInterval);
}

HttpResponse Agent::serveMetrics() {
  if (auto self = selfCollector_->collect()) {
    exporter_.recordSelf(*self);
  } else {
    failures_.failure("self", Severity::kWarning, "self collector: " + self.error().message);
  }
  exporter_.recordHttp(server_.stats());
  return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", exporter_.render()};
}

// /readyz turns 200 after the first full node collection. Its body states each
// part; parts that are optional (kubelet, NRI, PSI) never make it 503.
HttpResponse Agent::serveReadyz() const {
  std::ostringstream body;
  body << (ready_ ? "ready" : "not ready: waiting for the first full node collection") << "\n";
  body << "node collector: " << (ready_ ? "ok" : "pending") << "\n";
  body << "psi: ";
  switch (nodeCollector_.psiSupport()) {
    case Support::kSupported:
      body << "supported\n";
      break;
    case Support::kUnsupported:
      body << "unsupported (" << nodeCollector_.psiReason() << ")\n";
      break;
    case Support::kUnknown:
      body << "unknown\n";
      break;
  }
  body << "kubelet: "
       << (!kubeletProbed_ ? "not probed yet"
                           : (kubeletUp_ ? "reachable" : "unreachable (pods unavailable)"))
       << "\n";
  body << "nri: "
       << (opts_.enableNriRuntimeHook ? "not connected (plugin not in this build)" : "disabled")
       << "\n";
  return HttpResponse{ready_ ? 200u : 503u, "text/plain; charset=utf-8", body.str()};
}

}  // namespace koord
