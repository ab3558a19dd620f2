// TestApiServer: a stand-in for kube-apiserver, which cannot run in CI, speaking its
// wire protocol over plain HTTP/1.1 on 127.0.0.1 (kernel-picked port) from its own
// io_context thread. Its replies are shaped after a real kube-apiserver 1.32's
// (tests/fixtures/kube-api/): the same headers (Audit-Id, Cache-Control,
// Content-Type application/json, X-Kubernetes-Pf-*), Status bodies, lists with
// metadata.resourceVersion, and watches as a chunked stream with one event JSON
// plus "\n" per chunk (ADDED, MODIFIED, DELETED, BOOKMARK, and ERROR with a 410
// "Expired" Status for a compacted resourceVersion), ended at timeoutSeconds.
//
// It serves nodes, pods and events (core v1), nodeslos and nodemetrics
// (slo.koordinator.sh/v1alpha1) and noderesourcetopologies
// (topology.node.k8s.io/v1alpha1): get, list (fieldSelector=metadata.name=x), watch
// (resourceVersion, allowWatchBookmarks, timeoutSeconds, fieldSelector), create,
// update and merge-patch of the object and of /status (409 on a stale
// resourceVersion, 422 on a NodeMetric status.updateTime that is not RFC 3339),
// delete, and pod evictions (UID preconditions, PodDisruptionBudgets: protect()).
// The model is in test_apiserver_store.h.
//
// Tests drive it from their own thread; every method is thread-safe. Faults
// (429 with Retry-After, 401, 403, 500, a watch that hangs, a watch cut mid-event, a
// watch answered 410 Expired at once, a reply held back past the client's deadline)
// apply to the next matching requests; restart() drops every connection and watch
// and listens again on the same port, keeping the objects. Every request is logged.
//
// Plain HTTP by default; with Options::tls, HTTPS with a throw-away CA (caFile())
// and a server certificate for 127.0.0.1 and localhost (test_certs.h).
// Set-up failures (bind) throw: this is test code.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace koord::test {

class TestApiServer {
 public:
  struct Options {
    // Requests without "Authorization: Bearer <token>" get the real 401 Status;
    // "" checks nothing.
    std::string bearerToken;
    // How often a watch that asked for bookmarks gets one; 0: never.
    std::chrono::milliseconds bookmarkInterval{0};
    bool tls = false;
  };

  enum class Fault {
    kTooManyRequests,   // 429, Retry-After: retryAfterSeconds, TooManyRequests Status
    kUnauthorized,      // 401, the real Unauthorized Status
    kForbidden,         // 403, a Forbidden Status naming the verb and resource
    kInternalError,     // 500, InternalError Status
    kWatchHang,         // watches only: 200 and headers, then nothing, ever
    kWatchCutMidEvent,  // watches only: the first event's chunk half sent, then close
    kWatchGone,         // watches only: 200, one ERROR event 410 Expired, end of stream
    kSlow,              // answered as without the fault, after addFault()'s delay
  };
  struct FaultRule {
    Fault fault = Fault::kTooManyRequests;
    int times = 1;             // how many matching requests get it; -1: all
    std::string pathContains;  // "" matches every request; else a substring of the target
    int retryAfterSeconds = 1;
  };

  struct LoggedRequest {
    std::string method;
    std::string target;    // as sent, with the query
    std::string verb;      // get, list, watch, create, update, patch, delete ("" if unrouted)
    std::string resource;  // "nodemetrics/status", "pods/eviction" ("" if unrouted)
    std::string authorization, userAgent, contentType, accept;
    std::string body;
    unsigned status = 0;
    std::chrono::steady_clock::time_point at;  // when it was read (answered, for kSlow)
  };

  TestApiServer();
  explicit TestApiServer(Options options);
  ~TestApiServer();  // drops every connection
  TestApiServer(const TestApiServer&) = delete;
  TestApiServer& operator=(const TestApiServer&) = delete;

  uint16_t port() const;
  std::string url() const;  // "http://127.0.0.1:<port>" ("https://" with tls)
  // The CA's PEM file, in a temp dir removed with the server; "" unless tls.
  const std::string& caFile() const;

  // Objects. resource is the plural ("nodes", "nodemetrics", "pods"); a namespaced
  // object's metadata.namespace defaults to "default". put() stamps apiVersion, kind,
  // uid, creationTimestamp when absent and a new resourceVersion, tells matching
  // watches (ADDED or MODIFIED), and returns the object as stored. Unknown resource:
  // std::invalid_argument.
  nlohmann::json put(const std::string& resource, nlohmann::json object);
  // DELETED to matching watches; false if there was no such object.
  bool remove(const std::string& resource, const std::string& name, const std::string& ns = "");
  std::optional<nlohmann::json> get(const std::string& resource, const std::string& name,
                                    const std::string& ns = "") const;
  int64_t resourceVersion() const;
  // Watches from a resourceVersion below oldestValid get the 410 ERROR event.
  void compact(int64_t oldestValid);

  // A PodDisruptionBudget named `budget` that allows no disruption protects the pod
  // ns/name: its Evictions get the real 429 (cause DisruptionBudget) while the pod's
  // status.phase is Running; processed false: the 429 of a budget the disruption
  // controller has not processed yet (Retry-After: 10). unprotect() lifts it.
  void protect(const std::string& ns, const std::string& name, const std::string& budget,
               bool processed = true);
  void unprotect(const std::string& ns, const std::string& name);

  void setBearerToken(std::string token);
  void setBookmarkInterval(std::chrono::milliseconds interval);
  void addFault(FaultRule rule);
  // The same for requests of one verb only ("list", "watch", "update", ...; "" any);
  // delay is how long kSlow holds a request back.
  void addFault(FaultRule rule, std::string verb, std::chrono::milliseconds delay = {});
  void clearFaults();

  // Closes every connection (watches end without their last chunk, as when an API
  // server dies) and the listener, then listens again on the same port. Objects,
  // faults and the log stay.
  void restart();
  // stop(): connections and listener closed, connects refused; start(): listen again
  // on the same port.
  void stop();
  void start();

  std::vector<LoggedRequest> requests() const;
  // How many logged requests had this verb on this resource ("watch", "nodeslos").
  size_t count(const std::string& verb, const std::string& resource) const;
  // Watches being streamed now (hung ones included).
  size_t activeWatches() const;
  // Bytes over every connection so far (HTTP, not TLS framing): requests received
  // (request line, headers, body) and replies and watch events sent.
  uint64_t bytesReceived() const;
  uint64_t bytesSent() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace koord::test
