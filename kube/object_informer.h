// ObjectInformer: keeps one named cluster-scoped object (the node's Node, NodeSLO or
// NodeMetric) current through list + watch on the ApiClient; the decisions
// (resourceVersion, 410 re-list, back-off) are InformerState's, this class only
// does the requests and the timers on the loop thread. One shape serves every kind.
//
// Requests:
//   LIST  <collection>?fieldSelector=metadata.name%3D<name>
//   WATCH <collection>?watch=true&allowWatchBookmarks=true&resourceVersion=<rv>
//         &timeoutSeconds=<t>&fieldSelector=metadata.name%3D<name>
// t is jittered in [watchTimeout, 2 x watchTimeout) so a fleet's watches do not
// all end together (client-go's 5 to 10 minutes). A watch from which no byte came
// for t + 30 s (the server's timeout plus grace; bookmarks arrive about every
// minute) is dropped and resumed: a silent watch is replaced, never waited on.
//
// Failures are logged through the FailureLog (one line per streak, keyed by the
// resource; 410 Expired re-lists have their own key, one line per storm) and kept for /readyz:
// lastError() says why the informer is not watching.
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this first.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/log.h"
#include "kube/api_client.h"
#include "kube/informer_state.h"

namespace koord {

struct ObjectInformerConfig {
  // "nodeslos": for counts, logs and /readyz.
  std::string resource;
  // "/apis/slo.koordinator.sh/v1alpha1/nodeslos", "/api/v1/nodes".
  std::string collectionPath;
  std::string name;  // the object's name (the node's name)
  std::chrono::seconds watchTimeout = std::chrono::minutes(5);
  std::chrono::seconds idleGrace = std::chrono::seconds(30);
};

class ObjectInformer {
 public:
  // object: the new object, or nullopt when it does not exist (deleted, or absent
  // at list time). Called only when it changed; bookmarks are not changes.
  using ChangeFn = std::function<void(const std::optional<nlohmann::json>& object)>;

  ObjectInformer(boost::asio::io_context& io, ApiClient& client, ObjectInformerConfig config,
                 const Clock& clock, FailureLog& failures, std::function<double()> random01);
  ~ObjectInformer();
  ObjectInformer(const ObjectInformer&) = delete;
  ObjectInformer& operator=(const ObjectInformer&) = delete;

  void onChange(ChangeFn fn) { change_ = std::move(fn); }
  void start();
  void stop();

  bool synced() const { return state_.synced(); }
  // A watch is open and answered 200.
  bool watching() const { return watching_; }
  const std::optional<nlohmann::json>& object() const { return state_.object(); }
  const std::string& resourceVersion() const { return state_.resourceVersion(); }
  const std::string& lastError() const { return lastError_; }
  const ObjectInformerConfig& config() const { return config_; }
  uint64_t relists() const { return state_.relists(); }
  uint64_t events() const { return events_; }
  uint64_t watchFailures() const { return watchFailures_; }
  // Wall time of the last list or event (or bookmark): the freshness /readyz shows.
  std::optional<Clock::Wall> lastHeard() const { return lastHeard_; }

 private:
  void step();
  void list();
  void watch(const std::string& resourceVersion);
  void wait(std::chrono::nanoseconds d);
  void fail(const std::string& what, unsigned httpStatus, std::optional<std::chrono::seconds> ra,
            const std::string& body);
  void succeeded();
  // The FailureLog key of 410 Expired streaks, and the end of one (a watch event,
  // bookmark or clean end).
  std::string expiredKey() const;
  void progressed();
  // Calls the change handler; one that throws is logged, the informer goes on.
  void notify();
  std::string selector() const;

  boost::asio::io_context& io_;
  ApiClient& client_;
  ObjectInformerConfig config_;
  const Clock* clock_;
  FailureLog& failures_;
  std::function<double()> random_;
  InformerState state_;
  ChangeFn change_;
  boost::asio::steady_timer timer_;
  std::optional<ApiClient::RequestId> inFlight_;
  // Bumped whenever a request is abandoned, so a late callback of an old watch is ignored.
  std::shared_ptr<uint64_t> epoch_ = std::make_shared<uint64_t>(0);
  bool running_ = false;
  bool watching_ = false;
  bool expiredStreak_ = false;  // a 410 was logged and the watch made no progress since
  std::string lastError_;
  uint64_t events_ = 0;
  uint64_t watchFailures_ = 0;
  std::optional<Clock::Wall> lastHeard_;
};

}  // namespace koord
