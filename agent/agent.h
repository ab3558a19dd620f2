// Agent: the daemon. One Boost.Asio io_context runs everything: the collector
// timer, the kubelet probe, the HTTP server and the signal handler. Modules plug in
// here; each does its I/O serially on the loop thread (STYLE.md habit 12).
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this first.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <string>

#include "agent/clock.h"
#include "agent/http_server.h"
#include "agent/log.h"
#include "agent/options.h"
#include "metrics/exporter.h"
#include "metrics/node_collector.h"
#include "metrics/self_collector.h"

namespace koord {

// Facts about this host that main() reads once (sysconf) and hands down.
struct SystemInfo {
  long ticksPerSecond = 100;
  long pageSize = 4096;
};

class Agent {
 public:
  Agent(boost::asio::io_context& io, Options options, const Clock& clock, SystemInfo sys);

  // Binds the HTTP server, arms the timers and the signal handler. Errors (address
  // in use, unreadable --config) are returned; the caller exits non-zero.
  Status start();
  // Stops every timer, the server and the signal handler so io_context::run()
  // returns. Idempotent; SIGTERM and SIGINT call it.
  void stop();

  bool ready() const { return ready_; }
  uint16_t httpPort() const { return server_.port(); }

 private:
  void scheduleCollect();
  void collectOnce();
  void scheduleKubeletProbe(std::chrono::nanoseconds delay);
  void probeKubelet();
  void kubeletProbeDone(const std::string& endpoint, boost::system::error_code ec);

  HttpResponse serveMetrics();
  HttpResponse serveReadyz() const;
  std::string kubeletHost() const;
  uint16_t kubeletPort() const;

  boost::asio::io_context& io_;
  Options opts_;
  const Clock* clock_;
  SystemInfo sys_;

  HttpServer server_;
  Exporter exporter_;
  NodeCollector nodeCollector_;
  std::unique_ptr<SelfCollector> selfCollector_;
  FailureLog failures_;

  boost::asio::steady_timer collectTimer_;
  std::chrono::steady_clock::time_point nextCollect_{};
  boost::asio::steady_timer kubeletTimer_;
  boost::asio::steady_timer kubeletDeadline_;
  std::unique_ptr<boost::asio::ip::tcp::resolver> resolver_;
  std::unique_ptr<boost::asio::ip::tcp::socket> kubeletSocket_;
  boost::asio::signal_set signals_;

  bool ready_ = false;
  bool stopped_ = false;
  bool kubeletUp_ = false;
  bool kubeletProbed_ = false;
};

}  // namespace koord
