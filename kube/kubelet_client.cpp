// KubeletClient implementation: a thin user of the shared transport (kube/http_client)
// and credentials (kube/http_credentials). What is the kubelet client's own: one GET
// at a time (a second get() while one is in flight fails at once), the path check,
// and errors found before any I/O (token file, CA file, path) delivered through the
// loop rather than inside get().
//
// Lifetimes: KubeletClient::Impl is owned by shared_ptr; the transport's callback and
// the deferred failures hold only a weak_ptr to it, so the client can be destroyed at
// any time. cancel() bumps an epoch so a deferred failure from before is dropped.
#include "kube/kubelet_client.h"

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <boost/asio/post.hpp>
#include <cerrno>
#include <exception>
#include <optional>

#include "base/log.h"
#include "kube/http_client.h"
#include "kube/http_credentials.h"

namespace koord {
namespace {

constexpr std::string_view kKubeletSkipVerifyHint =
    " (--kubelet-skip-tls-verify skips verification, as koordlet does)";

TlsSettings tlsSettings(const KubeletClientConfig& config) {
  TlsSettings s;
  s.skipVerify = config.skipVerify;
  s.caFile = config.caFile;
  return s;
}

}  // namespace

struct KubeletClient::Impl : std::enable_shared_from_this<KubeletClient::Impl> {
  Impl(boost::asio::io_context& ioContext, KubeletClientConfig c)
      : io(ioContext),
        config(std::move(c)),
        endpoint((config.useTls ? "https://" : "http://") + hostPort(config.host, config.port)),
        http(io, "kubelet"),
        tls(tlsSettings(config), "kubelet") {
    if (!config.tokenFile.empty()) token.emplace(config.tokenFile, "kubelet");
  }

  void get(const std::string& path, Callback callback);
  void cancel();
  // Delivers an error that happened before any I/O, asynchronously (the callback
  // never runs inside get()), unless cancel() or the destructor comes first.
  void failSoon(Callback callback, Error error);

  boost::asio::io_context& io;
  KubeletClientConfig config;
  std::string endpoint;
  HttpClient http;
  TlsContextSource tls;
  std::optional<TokenFile> token;
  std::optional<HttpClient::Id> current;
  uint64_t epoch = 0;  // bumped by cancel(); failSoon() deliveries from before are dropped
};

void KubeletClient::Impl::get(const std::string& path, Callback callback) {
  const std::string what = "GET " + endpoint + path;
  if (current) {
    failSoon(std::move(callback), makeError(what + ": a request is already in flight", EBUSY));
    return;
  }
  if (!validTarget(path)) {
    failSoon(std::move(callback), makeError(what + ": invalid path", EINVAL));
    return;
  }
  HttpRequest request;
  request.target = path;
  request.headers = {{"Accept", "application/json"}, {"User-Agent", "koordlet-cpp"}};
  if (token) {
    auto value = token->current();
    if (!value.ok()) {
      failSoon(std::move(callback),
               makeError(what + ": " + value.error().message, value.error().sysErrno));
      return;
    }
    request.headers.emplace_back("Authorization", "Bearer " + *value);
  }
  HttpTarget target;
  target.host = config.host;
  target.port = config.port;
  if (config.useTls) {
    auto ctx = tls.context();
    if (!ctx.ok()) {
      failSoon(std::move(callback),
               makeError(what + ": " + ctx.error().message, ctx.error().sysErrno));
      return;
    }
    target.tls = std::move(*ctx);
    target.verify = !config.skipVerify;
    target.verifyHint = std::string(kKubeletSkipVerifyHint);
  }
  // The transport forgets the exchange before calling back; so do we, so the
  // callback may start the next get().
  current = http.request(
      target, std::move(request), config.timeout, config.maxBodyBytes,
      [weak = weak_from_this(), callback = std::move(callback)](Result<HttpReply> reply) {
        auto self = weak.lock();
        if (!self) return;
        self->current.reset();
        if (!reply.ok()) {
          callback(reply.error());
          return;
        }
        callback(KubeletResponse{reply->status, std::move(reply->body)});
      });
}

void KubeletClient::Impl::cancel() {
  ++epoch;
  if (current) {
    http.cancel(*current);
    current.reset();
  }
}

void KubeletClient::Impl::failSoon(Callback callback, Error error) {
  boost::asio::post(io, [weak = weak_from_this(), epoch = epoch, callback = std::move(callback),
                         error = std::move(error)]() mutable {
    auto self = weak.lock();
    if (!self || self->epoch != epoch) return;
    try {
      callback(std::move(error));
    } catch (const std::exception& e) {
      KLOG_ERROR << "kubelet: callback threw: " << e.what();
    } catch (...) {
      KLOG_ERROR << "kubelet: callback threw";
    }
  });
}

// ---- KubeletClient ----

KubeletClient::KubeletClient(boost::asio::io_context& io, KubeletClientConfig config)
    : impl_(std::make_shared<Impl>(io, std::move(config))) {}

KubeletClient::~KubeletClient() { impl_->cancel(); }

void KubeletClient::get(const std::string& path, Callback callback) {
  impl_->get(path, std::move(callback));
}

void KubeletClient::cancel() { impl_->cancel(); }

std::string KubeletClient::endpoint() const { return impl_->endpoint; }

void KubeletClient::setEndpoint(const std::string& host, uint16_t port) {
  impl_->config.host = host;
  impl_->config.port = port;
  impl_->endpoint = (impl_->config.useTls ? "https://" : "http://") + hostPort(host, port);
}

const std::string& KubeletClient::host() const { return impl_->config.host; }
uint16_t KubeletClient::port() const { return impl_->config.port; }

}  // namespace koord
