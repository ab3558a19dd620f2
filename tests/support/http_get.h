// httpGet: one bounded HTTP/1.1 GET to the agent on 127.0.0.1, for end-to-end
// tests and benchmarks that scrape a real koordlet process. Plain sockets, no
// library: a test of the agent's HTTP server must not share its HTTP code.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace koord::test {

struct HttpReply {
  unsigned status = 0;
  std::string body;
};

// One GET on a fresh connection with "Connection: close", read to EOF; a chunked body
// (the kubelet's, over 2 KiB) joined. Bounded:
// each socket call times out after 2/5 of `total` (SO_SNDTIMEO bounds connect() on
// Linux too) and the whole exchange after `total` (default 5 s: 2 s a call; longer
// for an agent under emulation, bench/pods-v2.sh). nullopt when there was no complete
// reply (refused, timed out, cut short), which callers treat as "not yet" and poll
// again.
std::optional<HttpReply> httpGet(uint16_t port, const std::string& target,
                                 std::chrono::milliseconds total = std::chrono::seconds(5));

}  // namespace koord::test
