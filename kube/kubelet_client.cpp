// KubeletClient implementation: one KubeletRequest per get(), driven by the caller's
// io_context on the loop thread. Every Asio/Beast call uses its error_code form, so
// nothing throws into the loop.
//
// Lifetimes: the client's state (ClientCore, which is KubeletClient::Impl) is owned
// by shared_ptr and holds the request in flight. Each pending handler holds a
// shared_ptr to its KubeletRequest, so the request (socket, TLS stream, parser,
// timer) outlives every handler that can still run; the request only keeps a weak_ptr
// to its ClientCore, so there is no cycle and the client can be destroyed at any
// time. cancel() and the destructor mark the request done, close its socket and
// cancel its resolver and timer; the aborted handlers then run once, see done_ and
// drop their references, and the io_context runs out of work. (A host-name lookup
// already inside getaddrinfo finishes on Asio's resolver thread first; that is
// bounded by the resolver's own timeout.)
//
// Deadline: one steady_timer per request, armed once for the whole exchange (resolve,
// connect, TLS handshake, write, read). When it fires the request finishes with
// "timed out after <timeout>" and closes the socket; progress does not extend it,
// so a kubelet trickling bytes cannot hold the poll.
//
// Credentials: the token and CA files are stat(2)ed before each request and re-read
// only when their identity (device, inode), size or mtime changed. Projected
// service-account tokens are rotated by the kubelet's atomic writer (a new file behind
// a symlink swap), which always changes the inode. An in-place rewrite to the same
// size within one mtime tick (a few ms) would go unseen until the file next changes.
#include "kube/kubelet_client.h"

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>
#include <exception>
#include <optional>
#include <string_view>

#include "base/duration.h"
#include "base/log.h"
#include "base/read_file.h"

namespace koord {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;

// A kubelet's reply header is a few hundred bytes; this only stops a runaway peer.
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
// A projected service-account token is about 1 KiB.
constexpr size_t kMaxTokenBytes = 64 * 1024;
constexpr std::string_view kSkipVerifyHint =
    " (--kubelet-skip-tls-verify skips verification, as koordlet does)";

int sysErrnoOf(const error_code& ec) {
  return ec.category() == boost::system::system_category() ? ec.value() : 0;
}

// What identifies one version of a file without reading it.
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtimeSec = 0;
  int64_t mtimeNsec = 0;
  bool operator==(const FileStamp&) const = default;
};

// stat(2) follows symlinks, so a rotated ..data symlink shows up as a new inode.
Result<FileStamp> statFile(const std::string& what, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    return makeError(what + " " + path + ": " + std::strerror(err), err);
  }
  return FileStamp{st.st_dev, st.st_ino, st.st_size, static_cast<int64_t>(st.st_mtim.tv_sec),
                   static_cast<int64_t>(st.st_mtim.tv_nsec)};
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// "[::1]" for IPv6 literals (URLs and the Host header need brackets), else host as is.
std::string bracketed(const std::string& host) {
  error_code ec;
  const auto address = net::ip::make_address(host, ec);
  return !ec && address.is_v6() ? "[" + host + "]" : host;
}

}  // namespace

namespace kubelet_internal {

class ClientCore;

// One GET: resolve -> connect -> [TLS handshake] -> write -> read, under one deadline.
class KubeletRequest : public std::enable_shared_from_this<KubeletRequest> {
 public:
  enum class Step { kResolve, kConnect, kHandshake, kWrite, kRead };

  struct Params {
    std::weak_ptr<ClientCore> owner;
    KubeletClient::Callback callback;
    std::string what;      // "GET https://10.0.0.5:10250/pods/", prefix of every error
    std::string host;      // as configured: IP literal or name
    std::string hostPort;  // "10.0.0.5:10250", "[::1]:10250"
    uint16_t port = 0;
    std::shared_ptr<ssl::context> tls;  // null: plain HTTP
    bool verify = false;                // verify the peer (TLS only)
    std::chrono::nanoseconds timeout{};
    size_t maxBodyBytes = 0;
  };

  KubeletRequest(net::io_context& io, Params params)
      : p_(std::move(params)), resolver_(io), timer_(io) {
    if (p_.tls) {
      tls_.emplace(io.get_executor(), *p_.tls);
    } else {
      plain_.emplace(io.get_executor());
    }
    parser_.header_limit(kMaxHeaderBytes);
    parser_.body_limit(static_cast<std::uint64_t>(p_.maxBodyBytes));
  }

  void start(const std::string& path, const std::string& token);
  // Ends the request without calling the callback (cancel(), destructor).
  void abandon() {
    p_.callback = nullptr;
    shutdown();
  }

 private:
  beast::tcp_stream& tcp() { return tls_ ? tls_->next_layer() : *plain_; }

  void arm();
  void onTimer(error_code ec);
  void resolve();
  void onResolve(error_code ec, const tcp::resolver::results_type& results);
  void onConnect(error_code ec);
  void handshake();
  void onHandshake(error_code ec);
  void write();
  void onWrite(error_code ec);
  void read();
  void onHeader(error_code ec);
  void onRead(error_code ec);
  Error readError(const error_code& ec) const;
  void fail(std::string step, const error_code& ec);
  void finish(Result<KubeletResponse> result);
  // Closes the socket, cancels the resolver and the timer. Idempotent.
  void shutdown();

  Params p_;  // first, so its TLS context outlives the stream made from it
  tcp::resolver resolver_;
  net::steady_timer timer_;
  std::optional<beast::tcp_stream> plain_;
  std::optional<ssl::stream<beast::tcp_stream>> tls_;
  http::request<http::empty_body> req_;
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
  Step step_ = Step::kResolve;
  bool done_ = false;
  std::chrono::steady_clock::time_point started_;
};

// The client's state; KubeletClient::Impl is this type (requests name it, and the
// nested Impl is private).
class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  using Callback = KubeletClient::Callback;

  ClientCore(net::io_context& io, KubeletClientConfig config);

  void get(const std::string& path, Callback callback);
  void cancel();
  const std::string& endpoint() const { return endpoint_; }

 private:
  friend class KubeletRequest;

  // Delivers an error that happened before any I/O, asynchronously (the callback never
  // runs inside get()), unless cancel() or the destructor comes first.
  void failSoon(Callback callback, Error error);
  // Re-reads the token file if it changed; token_ is then current.
  Status refreshToken();
  // The TLS context for the next request, rebuilt when the CA file changed.
  Result<std::shared_ptr<ssl::context>> tlsContext();
  Result<std::shared_ptr<ssl::context>> newTlsContext();

  net::io_context& io_;
  const KubeletClientConfig config_;
  const std::string hostPort_;
  const std::string endpoint_;
  std::shared_ptr<KubeletRequest> current_;
  uint64_t epoch_ = 0;  // bumped by cancel(); failSoon() deliveries from before are dropped

  std::string token_;
  std::optional<FileStamp> tokenStamp_;
  std::shared_ptr<ssl::context> tls_;
  std::optional<FileStamp> caStamp_;
};

// ---- KubeletRequest ----

void KubeletRequest::start(const std::string& path, const std::string& token) {
  started_ = std::chrono::steady_clock::now();
  req_.method(http::verb::get);
  req_.target(path);
  req_.version(11);
  req_.set(http::field::host, p_.hostPort);
  req_.set(http::field::accept, "application/json");
  req_.set(http::field::user_agent, "koordlet-cpp");
  if (!token.empty()) req_.set(http::field::authorization, "Bearer " + token);
  // A new connection per request (one poll every 10s): ask the kubelet not to keep
  // an idle one open for us.
  req_.keep_alive(false);
  arm();
  resolve();
}

void KubeletRequest::arm() {
  // timeout <= 0 means no deadline, as Go's http.Client.Timeout == 0.
  if (p_.timeout <= std::chrono::nanoseconds::zero()) return;
  timer_.expires_after(p_.timeout);
  timer_.async_wait([self = shared_from_this()](error_code ec) { self->onTimer(ec); });
}

void KubeletRequest::onTimer(error_code ec) {
  if (ec || done_) return;
  static constexpr const char* kDoing[] = {"resolving the host", "connecting",
                                           "in the TLS handshake", "sending the request",
                                           "reading the reply"};
  finish(makeError(p_.what + ": timed out after " + formatGoDuration(p_.timeout) + " " +
                       kDoing[static_cast<int>(step_)],
                   ETIMEDOUT));
}

void KubeletRequest::resolve() {
  step_ = Step::kResolve;
  error_code ec;
  const auto address = net::ip::make_address(p_.host, ec);
  if (!ec) {  // an IP literal needs no resolver
    step_ = Step::kConnect;
    tcp().async_connect(tcp::endpoint(address, p_.port),
                        [self = shared_from_this()](error_code e) { self->onConnect(e); });
    return;
  }
  resolver_.async_resolve(
      p_.host, std::to_string(p_.port), tcp::resolver::numeric_service,
      [self = shared_from_this()](error_code e, const tcp::resolver::results_type& results) {
        self->onResolve(e, results);
      });
}

void KubeletRequest::onResolve(error_code ec, const tcp::resolver::results_type& results) {
  if (done_) return;
  if (ec) {
    fail("resolve " + p_.host, ec);
    return;
  }
  step_ = Step::kConnect;
  // Tries each address in turn, as Go's dialer does.
  tcp().async_connect(results, [self = shared_from_this()](error_code e, const tcp::endpoint&) {
    self->onConnect(e);
  });
}

void KubeletRequest::onConnect(error_code ec) {
  if (done_) return;
  if (ec) {
    fail("connect " + p_.hostPort, ec);
    return;
  }
  error_code ignored;
  tcp().socket().set_option(tcp::no_delay(true), ignored);
  if (tls_) {
    handshake();
  } else {
    write();
  }
}

void KubeletRequest::handshake() {
  step_ = Step::kHandshake;
  error_code ec;
  net::ip::make_address(p_.host, ec);
  const bool isAddress = !ec;
  ec = {};
  // SNI carries host names only (RFC 6066 forbids literal addresses).
  if (!isAddress && SSL_set_tlsext_host_name(tls_->native_handle(), p_.host.c_str()) != 1) {
    finish(makeError(p_.what + ": TLS: cannot set server name " + p_.host));
    return;
  }
  if (p_.verify) {
    tls_->set_verify_mode(ssl::verify_peer, ec);
    // host_name_verification checks the leaf against the name or IP; on a mismatch we
    // record why, so the handshake error says "Hostname mismatch" rather than an
    // unspecified verification failure.
    if (!ec) {
      tls_->set_verify_callback(
          [check = ssl::host_name_verification(p_.host), isAddress](bool preverified,
                                                                    ssl::verify_context& ctx) {
            if (check(preverified, ctx)) return true;
            if (preverified) {
              X509_STORE_CTX_set_error(ctx.native_handle(), isAddress
                                                                ? X509_V_ERR_IP_ADDRESS_MISMATCH
                                                                : X509_V_ERR_HOSTNAME_MISMATCH);
            }
            return false;
          },
          ec);
    }
  } else {
    tls_->set_verify_mode(ssl::verify_none, ec);
  }
  if (ec) {
    fail("TLS setup", ec);
    return;
  }
  tls_->async_handshake(ssl::stream_base::client,
                        [self = shared_from_this()](error_code e) { self->onHandshake(e); });
}

void KubeletRequest::onHandshake(error_code ec) {
  if (done_) return;
  if (!ec) {
    write();
    return;
  }
  std::string message = p_.what + ": TLS handshake with " + p_.hostPort + ": " + ec.message();
  const long verifyResult = SSL_get_verify_result(tls_->native_handle());
  if (p_.verify && verifyResult != X509_V_OK) {
    message += ": ";
    message += X509_verify_cert_error_string(verifyResult);
    message += kSkipVerifyHint;
  }
  finish(makeError(std::move(message), sysErrnoOf(ec)));
}

void KubeletRequest::write() {
  step_ = Step::kWrite;
  auto onWritten = [self = shared_from_this()](error_code ec, size_t) { self->onWrite(ec); };
  if (tls_) {
    http::async_write(*tls_, req_, std::move(onWritten));
  } else {
    http::async_write(*plain_, req_, std::move(onWritten));
  }
}

void KubeletRequest::onWrite(error_code ec) {
  if (done_) return;
  if (ec) {
    fail("send request", ec);
    return;
  }
  read();
}

// The header is read on its own first, and a Content-Length over the cap is refused
// here: Boost 1.74's parser, in the eager mode http::async_read uses, loses the
// body_limit error when the header and the first body bytes arrive in one read,
// and would then take the whole body. Chunked and read-to-EOF bodies are counted
// as they arrive, which works.
void KubeletRequest::read() {
  step_ = Step::kRead;
  auto onHeader = [self = shared_from_this()](error_code ec, size_t) { self->onHeader(ec); };
  if (tls_) {
    http::async_read_header(*tls_, buffer_, parser_, std::move(onHeader));
  } else {
    http::async_read_header(*plain_, buffer_, parser_, std::move(onHeader));
  }
}

void KubeletRequest::onHeader(error_code ec) {
  if (done_) return;
  if (!ec && parser_.content_length().value_or(0) > p_.maxBodyBytes) {
    ec = http::error::body_limit;
  }
  if (ec) {
    finish(readError(ec));
    return;
  }
  auto onDone = [self = shared_from_this()](error_code e, size_t) { self->onRead(e); };
  if (tls_) {
    http::async_read(*tls_, buffer_, parser_, std::move(onDone));
  } else {
    http::async_read(*plain_, buffer_, parser_, std::move(onDone));
  }
}

void KubeletRequest::onRead(error_code ec) {
  if (done_) return;
  if (ec) {
    finish(readError(ec));
    return;
  }
  auto& res = parser_.get();
  KubeletResponse out;
  out.status = res.result_int();
  out.body = std::move(res.body());
  KLOG_V(4) << "kubelet: " << p_.what << " -> " << out.status << ", " << out.body.size()
            << " bytes in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started_)
                   .count()
            << "ms";
  finish(std::move(out));
}

Error KubeletRequest::readError(const error_code& ec) const {
  const std::string prefix = p_.what + ": ";
  if (ec == http::error::body_limit) {
    return makeError(prefix + "reply larger than " + std::to_string(p_.maxBodyBytes) + " bytes",
                     EFBIG);
  }
  if (ec == http::error::header_limit) {
    return makeError(prefix + "reply header larger than " + std::to_string(kMaxHeaderBytes) +
                     " bytes");
  }
  if (ec == http::error::end_of_stream) {
    return makeError(prefix + "reply cut off: the connection closed before a reply");
  }
  // partial_message: a plain connection closed mid-reply; stream_truncated: a TLS one
  // closed without close_notify, anywhere in the reply.
  if (ec == http::error::partial_message || ec == ssl::error::stream_truncated) {
    return makeError(prefix + "reply cut off: the connection closed before the whole reply");
  }
  if (ec.category() == http::make_error_code(http::error::bad_version).category()) {
    return makeError(prefix + "malformed reply: " + ec.message());
  }
  return makeError(prefix + "read reply: " + ec.message(), sysErrnoOf(ec));
}

void KubeletRequest::fail(std::string step, const error_code& ec) {
  finish(makeError(p_.what + ": " + step + ": " + ec.message(), sysErrnoOf(ec)));
}

void KubeletRequest::finish(Result<KubeletResponse> result) {
  if (done_) return;
  shutdown();
  // The owner forgets us first, so the callback may start the next get().
  if (auto owner = p_.owner.lock(); owner && owner->current_.get() == this) {
    owner->current_.reset();
  }
  auto callback = std::move(p_.callback);
  p_.callback = nullptr;
  if (!callback) return;
  // Callbacks must not throw; one that does is logged here rather than unwinding
  // through the loop.
  try {
    callback(std::move(result));
  } catch (const std::exception& e) {
    KLOG_ERROR << "kubelet: callback for " << p_.what << " threw: " << e.what();
  } catch (...) {
    KLOG_ERROR << "kubelet: callback for " << p_.what << " threw";
  }
}

void KubeletRequest::shutdown() {
  done_ = true;
  resolver_.cancel();
  timer_.cancel();
  // No TLS close_notify: the reply is complete or abandoned, and the kubelet does not
  // need one. Closing aborts whatever is pending on the socket.
  error_code ignored;
  tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
  tcp().close();
}

// ---- ClientCore ----

ClientCore::ClientCore(net::io_context& io, KubeletClientConfig config)
    : io_(io),
      config_(std::move(config)),
      hostPort_(bracketed(config_.host) + ":" + std::to_string(config_.port)),
      endpoint_((config_.useTls ? "https://" : "http://") + hostPort_) {}

void ClientCore::get(const std::string& path, Callback callback) {
  const std::string what = "GET " + endpoint_ + path;
  if (current_) {
    failSoon(std::move(callback), makeError(what + ": a request is already in flight", EBUSY));
    return;
  }
  // The target goes on the request line as is: no spaces, no control characters.
  const bool pathOk =
      !path.empty() && path.front() == '/' && std::none_of(path.begin(), path.end(), [](char c) {
        return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
      });
  if (!pathOk) {
    failSoon(std::move(callback), makeError(what + ": invalid path", EINVAL));
    return;
  }
  if (!config_.tokenFile.empty()) {
    if (auto s = refreshToken(); !s.ok()) {
      failSoon(std::move(callback), makeError(what + ": " + s.error().message, s.error().sysErrno));
      return;
    }
  }
  std::shared_ptr<ssl::context> tls;
  if (config_.useTls) {
    auto ctx = tlsContext();
    if (!ctx.ok()) {
      failSoon(std::move(callback),
               makeError(what + ": " + ctx.error().message, ctx.error().sysErrno));
      return;
    }
    tls = std::move(*ctx);
  }
  KubeletRequest::Params params;
  params.owner = weak_from_this();
  params.callback = std::move(callback);
  params.what = what;
  params.host = config_.host;
  params.hostPort = hostPort_;
  params.port = config_.port;
  params.tls = std::move(tls);
  params.verify = config_.useTls && !config_.skipVerify;
  params.timeout = config_.timeout;
  params.maxBodyBytes = config_.maxBodyBytes;
  current_ = std::make_shared<KubeletRequest>(io_, std::move(params));
  current_->start(path, config_.tokenFile.empty() ? std::string() : token_);
}

void ClientCore::cancel() {
  ++epoch_;
  if (current_) {
    auto request = std::move(current_);
    current_.reset();
    request->abandon();
  }
}

void ClientCore::failSoon(Callback callback, Error error) {
  net::post(io_, [weak = weak_from_this(), epoch = epoch_, callback = std::move(callback),
                  error = std::move(error)]() mutable {
    auto self = weak.lock();
    if (!self || self->epoch_ != epoch) return;
    try {
      callback(std::move(error));
    } catch (const std::exception& e) {
      KLOG_ERROR << "kubelet: callback threw: " << e.what();
    } catch (...) {
      KLOG_ERROR << "kubelet: callback threw";
    }
  });
}

Status ClientCore::refreshToken() {
  const std::string& path = config_.tokenFile;
  // The stamp is taken before reading: a change during the read is seen next time.
  auto stamp = statFile("token file", path);
  if (!stamp.ok()) return stamp.error();
  if (tokenStamp_ && *tokenStamp_ == *stamp) return Ok{};
  auto text = readFile(path, kMaxTokenBytes);
  if (!text.ok()) return makeError("token file " + text.error().message, text.error().sysErrno);
  std::string_view token = *text;
  while (!token.empty() && isSpace(token.back())) token.remove_suffix(1);
  while (!token.empty() && isSpace(token.front())) token.remove_prefix(1);
  if (token.empty()) return makeError("token file " + path + ": empty");
  // A control character would end (or forge) the Authorization header.
  for (char c : token) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return makeError("token file " + path + ": not a single-line token");
    }
  }
  if (tokenStamp_) {
    KLOG_V(2) << "kubelet: token file " << path << " changed, re-read";
  }
  token_ = std::string(token);
  tokenStamp_ = *stamp;
  return Ok{};
}

Result<std::shared_ptr<ssl::context>> ClientCore::tlsContext() {
  // Without verification the CA file is not read at all, as koordlet clears CAFile.
  if (config_.skipVerify || config_.caFile.empty()) {
    if (!tls_) {
      auto ctx = newTlsContext();
      if (!ctx.ok()) return ctx.error();
      error_code ec;
      // Verifying without a CA file: the system's trust store.
      if (!config_.skipVerify) (*ctx)->set_default_verify_paths(ec);
      if (ec) return makeError("TLS: system CA store: " + ec.message());
      tls_ = std::move(*ctx);
    }
    return tls_;
  }
  const std::string& path = config_.caFile;
  auto stamp = statFile("CA file", path);
  if (!stamp.ok()) return stamp.error();
  if (tls_ && caStamp_ && *caStamp_ == *stamp) return tls_;
  auto ctx = newTlsContext();
  if (!ctx.ok()) return ctx.error();
  error_code ec;
  (*ctx)->load_verify_file(path, ec);
  if (ec) return makeError("CA file " + path + ": no usable certificate: " + ec.message());
  if (caStamp_) {
    KLOG_V(2) << "kubelet: CA file " << path << " changed, re-read";
  }
  // Requests in flight keep the context they started with.
  tls_ = std::move(*ctx);
  caStamp_ = *stamp;
  return tls_;
}

Result<std::shared_ptr<ssl::context>> ClientCore::newTlsContext() {
  std::shared_ptr<ssl::context> ctx;
  try {  // the constructor throws only when OpenSSL cannot allocate
    ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  } catch (const std::exception& e) {
    return makeError(std::string("TLS: cannot create a context: ") + e.what());
  }
  // TLS 1.2 or later, as Go's crypto/tls client.
  if (SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION) != 1) {
    return makeError("TLS: cannot set the minimum protocol version");
  }
  return ctx;
}

}  // namespace kubelet_internal

struct KubeletClient::Impl : kubelet_internal::ClientCore {
  using ClientCore::ClientCore;
};

// ---- KubeletClient ----

KubeletClient::KubeletClient(net::io_context& io, KubeletClientConfig config)
    : impl_(std::make_shared<Impl>(io, std::move(config))) {}

KubeletClient::~KubeletClient() { impl_->cancel(); }

void KubeletClient::get(const std::string& path, Callback callback) {
  impl_->get(path, std::move(callback));
}

void KubeletClient::cancel() { impl_->cancel(); }

std::string KubeletClient::endpoint() const { return impl_->endpoint(); }

}  // namespace koord
