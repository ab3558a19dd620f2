// WriteQueue (nri/write_queue.h): the client's outgoing bytes, bounded in bytes
// and messages; what does not fit is refused, never queued.
#include <catch2/catch.hpp>

#include <string>

#include "nri/write_queue.h"

namespace test_nri_write_queue {  // this file's own names: tests build as unity chunks

using koord::nri::WriteLimits;
using koord::nri::WriteQueue;

TEST_CASE("the write queue keeps messages in order and counts their bytes", "[write-queue]") {
  WriteQueue q;
  CHECK(q.empty());
  REQUIRE(q.push("first"));
  REQUIRE(q.push("second!"));
  CHECK(q.messages() == 2);
  CHECK(q.bytes() == 12);
  CHECK(*q.front() == "first");
  q.pop();
  CHECK(*q.front() == "second!");
  CHECK(q.bytes() == 7);
  q.clear();
  CHECK(q.empty());
  CHECK(q.bytes() == 0);
}

TEST_CASE("the write queue refuses what would pass its byte limit and never holds more",
          "[write-queue]") {
  WriteLimits limits;
  limits.maxBytes = 10'000;
  WriteQueue q(limits);
  int accepted = 0;
  for (int i = 0; i < 100; ++i) {
    auto pushed = q.push(std::string(3'000, 'x'));
    CHECK(q.bytes() <= limits.maxBytes);
    if (!pushed) {
      CHECK_THAT(pushed.error().message, Catch::Contains("write queue full"));
      CHECK_THAT(pushed.error().message, Catch::Contains("10000"));
      continue;
    }
    ++accepted;
  }
  CHECK(accepted == 3);
  CHECK(q.bytes() == 9'000);
  // Room again once the peer takes a message.
  q.pop();
  CHECK(q.push(std::string(4'000, 'y')));
  CHECK(q.bytes() == 10'000);
  CHECK_FALSE(q.push("z"));
}

TEST_CASE("the write queue refuses a message larger than the whole limit even when empty",
          "[write-queue]") {
  WriteLimits limits;
  limits.maxBytes = 100;
  WriteQueue q(limits);
  CHECK_FALSE(q.push(std::string(101, 'x')));
  CHECK(q.empty());
  CHECK(q.bytes() == 0);
  CHECK(q.push(std::string(100, 'x')));
}

TEST_CASE("the write queue refuses past its message count however small the messages",
          "[write-queue]") {
  WriteLimits limits;
  limits.maxMessages = 4;
  WriteQueue q(limits);
  for (int i = 0; i < 4; ++i) REQUIRE(q.push("m"));
  auto pushed = q.push("m");
  REQUIRE_FALSE(pushed);
  CHECK_THAT(pushed.error().message, Catch::Contains("4 messages"));
  CHECK(q.messages() == 4);
}

TEST_CASE("the default write limits fit four of the largest messages a runtime accepts",
          "[write-queue]") {
  WriteLimits limits;
  WriteQueue q(limits);
  const std::string largest(koord::nri::kMaxTtrpcMessage + 10 + 16, 'x');  // + ttrpc, mux headers
  for (int i = 0; i < 4; ++i) REQUIRE(q.push(largest));
  CHECK_FALSE(q.push(largest));
}

}  // namespace test_nri_write_queue
