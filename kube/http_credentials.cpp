#include "kube/http_credentials.h"

#include <utility>  // Boost 1.74 Asio with C++20 needs this before any Asio header.

#include <openssl/ssl.h>
#include <sys/stat.h>

#include <boost/asio/buffer.hpp>
#include <cerrno>
#include <cstring>
#include <exception>
#include <string_view>

#include "base/log.h"
#include "base/read_file.h"

namespace koord {
namespace {

namespace ssl = boost::asio::ssl;
using boost::system::error_code;

// A projected service-account token is about 1 KiB.
constexpr size_t kMaxTokenBytes = 64 * 1024;

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

Result<FileStamp> statFile(const std::string& what, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    return makeError(what + " " + path + ": " + std::strerror(err), err);
  }
  return FileStamp{st.st_dev, st.st_ino, st.st_size, static_cast<int64_t>(st.st_mtim.tv_sec),
                   static_cast<int64_t>(st.st_mtim.tv_nsec)};
}

// ---- TokenFile ----

TokenFile::TokenFile(std::string path, std::string logName)
    : path_(std::move(path)), logName_(std::move(logName)) {}

Result<std::string> TokenFile::current() {
  // The stamp is taken before reading: a change during the read is seen next time.
  auto stamp = statFile("token file", path_);
  if (!stamp.ok()) return stamp.error();
  if (stamp_ && *stamp_ == *stamp) return token_;
  auto text = readFile(path_, kMaxTokenBytes);
  if (!text.ok()) return makeError("token file " + text.error().message, text.error().sysErrno);
  std::string_view token = *text;
  while (!token.empty() && isSpace(token.back())) token.remove_suffix(1);
  while (!token.empty() && isSpace(token.front())) token.remove_prefix(1);
  if (token.empty()) return makeError("token file " + path_ + ": empty");
  // A control character would end (or forge) the Authorization header.
  for (char c : token) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return makeError("token file " + path_ + ": not a single-line token");
    }
  }
  if (stamp_) {
    KLOG_V(2) << logName_ << ": token file " << path_ << " changed, re-read";
  }
  token_ = std::string(token);
  stamp_ = *stamp;
  return token_;
}

// ---- TlsContextSource ----

TlsContextSource::TlsContextSource(TlsSettings settings, std::string logName)
    : settings_(std::move(settings)), logName_(std::move(logName)) {}

Result<std::vector<FileStamp>> TlsContextSource::stamps() const {
  std::vector<FileStamp> out;
  auto add = [&out](const char* what, const std::string& path) -> Status {
    if (path.empty()) return Ok{};
    auto stamp = statFile(what, path);
    if (!stamp.ok()) return stamp.error();
    out.push_back(*stamp);
    return Ok{};
  };
  // Without verification the CA file is not read at all, as koordlet clears CAFile.
  if (!settings_.skipVerify) {
    if (auto s = add("CA file", settings_.caFile); !s.ok()) return s.error();
  }
  if (auto s = add("TLS client certificate", settings_.clientCertFile); !s.ok()) return s.error();
  if (auto s = add("TLS client key", settings_.clientKeyFile); !s.ok()) return s.error();
  return out;
}

Result<std::shared_ptr<ssl::context>> TlsContextSource::context() {
  auto now = stamps();
  if (!now.ok()) return now.error();
  if (ctx_ && *now == stamps_) return ctx_;
  auto built = build();
  if (!built.ok()) return built.error();
  if (ctx_) {
    KLOG_V(2) << logName_ << ": TLS files changed, re-read";
  }
  ctx_ = std::move(*built);
  stamps_ = std::move(*now);
  return ctx_;
}

Result<std::shared_ptr<ssl::context>> TlsContextSource::build() const {
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
  const TlsSettings& s = settings_;
  error_code ec;
  if (s.skipVerify) {
    // nothing to trust: the peer is not verified
  } else if (!s.caFile.empty()) {
    ctx->load_verify_file(s.caFile, ec);
    if (ec) return makeError("CA file " + s.caFile + ": no usable certificate: " + ec.message());
  } else if (!s.caData.empty()) {
    ctx->add_certificate_authority(boost::asio::buffer(s.caData), ec);
    if (ec) return makeError("TLS: CA data: no usable certificate: " + ec.message());
  } else {
    ctx->set_default_verify_paths(ec);
    if (ec) return makeError("TLS: system CA store: " + ec.message());
  }
  const bool hasCert = !s.clientCertFile.empty() || !s.clientCertData.empty();
  const bool hasKey = !s.clientKeyFile.empty() || !s.clientKeyData.empty();
  if (hasCert != hasKey) {
    return makeError(std::string("TLS: a client ") +
                     (hasCert ? "certificate without a key" : "key without a certificate"));
  }
  if (!s.clientCertFile.empty()) {
    ctx->use_certificate_chain_file(s.clientCertFile, ec);
    if (ec) return makeError("TLS client certificate " + s.clientCertFile + ": " + ec.message());
  } else if (!s.clientCertData.empty()) {
    ctx->use_certificate_chain(boost::asio::buffer(s.clientCertData), ec);
    if (ec) return makeError("TLS client certificate data: " + ec.message());
  }
  if (!s.clientKeyFile.empty()) {
    ctx->use_private_key_file(s.clientKeyFile, ssl::context::pem, ec);
    if (ec) return makeError("TLS client key " + s.clientKeyFile + ": " + ec.message());
  } else if (!s.clientKeyData.empty()) {
    ctx->use_private_key(boost::asio::buffer(s.clientKeyData), ssl::context::pem, ec);
    if (ec) return makeError("TLS client key data: " + ec.message());
  }
  return ctx;
}

}  // namespace koord
