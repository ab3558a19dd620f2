#include "tests/support/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>

namespace koord::test {

std::optional<HttpReply> httpGet(uint16_t port, const std::string& target,
                                 std::chrono::milliseconds total) {
  using namespace std::chrono_literals;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const long perCallMs = static_cast<long>(total.count()) * 2 / 5;
  const timeval timeout{perCallMs / 1000, (perCallMs % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return std::nullopt;
  }
  const std::string request =
      "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return std::nullopt;
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  const auto deadline = std::chrono::steady_clock::now() + total;
  char buf[16384];
  for (;;) {
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) return std::nullopt;
    raw.append(buf, static_cast<size_t>(n));
  }
  const auto headEnd = raw.find("\r\n\r\n");
  if (!raw.starts_with("HTTP/1.") || headEnd == std::string::npos || raw.size() < 12) {
    return std::nullopt;
  }
  HttpReply reply;
  reply.status = static_cast<unsigned>(std::atoi(raw.substr(9, 3).c_str()));
  reply.body = raw.substr(headEnd + 4);
  // A reply cut short must not pass for a complete one.
  std::string head = raw.substr(0, headEnd);
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (auto at = head.find("\r\ncontent-length:"); at != std::string::npos) {
    if (std::strtoull(head.c_str() + at + 17, nullptr, 10) != reply.body.size()) {
      return std::nullopt;
    }
  }
  // Chunked (a Go server, the kubelet, sends a body over 2 KiB so): the chunks joined; a
  // reply without its last (empty) chunk is cut short.
  if (head.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
    std::string joined;
    size_t at = 0;
    for (;;) {
      const size_t eol = reply.body.find("\r\n", at);
      if (eol == std::string::npos) return std::nullopt;
      const size_t size = std::strtoull(reply.body.c_str() + at, nullptr, 16);
      if (size == 0) break;
      if (eol + 2 + size + 2 > reply.body.size()) return std::nullopt;
      joined.append(reply.body, eol + 2, size);
      at = eol + 2 + size + 2;
    }
    reply.body = std::move(joined);
  }
  return reply;
}

}  // namespace koord::test
