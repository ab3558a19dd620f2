// http_credentials: the credentials an HTTPS client reads from files, kept current
// without re-reading them on every request. Shared by the kubelet client and the
// API client (kube/http_client is the transport both use).
//  - TokenFile: a bearer token file, re-read when it changes (projected
//    service-account tokens rotate).
//  - TlsContextSource: the TLS client context (trust: CA file or PEM data, or the
//    system store, or no verification; identity: an optional client certificate
//    and key, files or PEM data), rebuilt when one of its files changes.
//
// "Changed" is decided by stat(2): identity (device, inode), size or mtime. The
// kubelet's atomic writer rotates a projected token by swapping a symlink to a new
// file, which always changes the inode. An in-place rewrite to the same size within
// one mtime tick (a few ms) would go unseen until the file next changes.
//
// Errors name the file: "token file /var/run/...: No such file or directory",
// "CA file /etc/ca.crt: no usable certificate: ...", "TLS client certificate ...".
// Requests in flight keep the context they started with (shared_ptr).
#pragma once

#include <utility>  // Boost 1.74 Asio with C++20 needs this first.

#include <sys/types.h>

#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace koord {

// What identifies one version of a file without reading it.
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtimeSec = 0;
  int64_t mtimeNsec = 0;
  bool operator==(const FileStamp&) const = default;
};

// stat(2) (following symlinks); the error reads "<what> <path>: <strerror>".
Result<FileStamp> statFile(const std::string& what, const std::string& path);

class TokenFile {
 public:
  // logName prefixes the log line of a re-read ("kubelet", "kube-api").
  TokenFile(std::string path, std::string logName);
  // The current token, re-read first if the file changed. Surrounding whitespace
  // is trimmed; an empty or multi-line token is an error.
  Result<std::string> current();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string logName_;
  std::string token_;
  std::optional<FileStamp> stamp_;
};

struct TlsSettings {
  bool skipVerify = false;
  std::string caFile;  // neither caFile nor caData: the system's trust store
  std::string caData;  // PEM
  std::string clientCertFile;
  std::string clientCertData;  // PEM
  std::string clientKeyFile;
  std::string clientKeyData;  // PEM
};

class TlsContextSource {
 public:
  TlsContextSource(TlsSettings settings, std::string logName);
  // The context for the next request; rebuilt when a file it was made from changed.
  Result<std::shared_ptr<boost::asio::ssl::context>> context();

 private:
  Result<std::vector<FileStamp>> stamps() const;
  Result<std::shared_ptr<boost::asio::ssl::context>> build() const;

  TlsSettings settings_;
  std::string logName_;
  std::shared_ptr<boost::asio::ssl::context> ctx_;
  std::vector<FileStamp> stamps_;
};

}  // namespace koord
