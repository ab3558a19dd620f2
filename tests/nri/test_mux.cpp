// The mux framing (reference nri.md §2): Go's sender rule, byte for byte, and
// reassembly of per-connection byte streams from frames split anywhere.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "nri/mux.h"

namespace test_nri_mux {  // this file's own names: tests build as unity chunks

using koord::nri::appendFrames;
using koord::nri::frameMessage;
using koord::nri::kMuxHeaderSize;
using koord::nri::MuxReader;

namespace {

std::string header(uint32_t conn, uint32_t length) {
  std::string h;
  for (uint32_t v : {conn, length}) {
    for (int shift = 24; shift >= 0; shift -= 8)
      h.push_back(static_cast<char>((v >> shift) & 0xFF));
  }
  return h;
}

// A message whose bytes tell their position, so misordered reassembly shows.
std::string message(size_t size, char salt) {
  std::string m(size, '\0');
  for (size_t i = 0; i < size; ++i)
    m[i] = static_cast<char>((i * 31 + static_cast<size_t>(salt)) & 0xFF);
  return m;
}

std::vector<size_t> frameSizes(const std::vector<std::string>& frames) {
  std::vector<size_t> sizes;
  for (const auto& f : frames) sizes.push_back(f.size() - kMuxHeaderSize);
  return sizes;
}

}  // namespace

TEST_CASE("a message of at most 4096 bytes goes out as one frame", "[mux]") {
  for (size_t size : {size_t{1}, size_t{100}, size_t{4096}}) {
    auto m = message(size, 1);
    auto frames = frameMessage(2, m);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].substr(0, 8) == header(2, static_cast<uint32_t>(size)));
    CHECK(frames[0].substr(8) == m);
  }
}

TEST_CASE("a message over 4096 bytes goes out as exactly 4096 bytes then the rest", "[mux]") {
  for (size_t size : {size_t{4097}, size_t{4096 + 100}, size_t{10 * 1024}, size_t{3u << 20}}) {
    auto m = message(size, 2);
    auto frames = frameMessage(1, m);
    REQUIRE(frames.size() == 2);
    CHECK(frameSizes(frames) == std::vector<size_t>{4096, size - 4096});
    CHECK(frames[0].substr(0, 8) == header(1, 4096));
    CHECK(frames[1].substr(0, 8) == header(1, static_cast<uint32_t>(size - 4096)));
    CHECK(frames[0].substr(8) + frames[1].substr(8) == m);
  }
}

TEST_CASE("appendFrames writes the same bytes as frameMessage and never an empty frame", "[mux]") {
  std::string out = "prefix";
  auto m = message(10 * 1024, 3);
  appendFrames(out, 2, m);
  auto frames = frameMessage(2, m);
  CHECK(out == "prefix" + frames[0] + frames[1]);
  std::string none;
  appendFrames(none, 2, "");
  CHECK(none.empty());
  CHECK(frameMessage(2, "").empty());
}

TEST_CASE("the mux header is big-endian ConnID then length", "[mux]") {
  auto frames = frameMessage(0x01020304, message(0x0105, 4));
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].substr(0, 8) == std::string("\x01\x02\x03\x04\x00\x00\x01\x05", 8));
}

TEST_CASE("small messages reassemble when the input is split at every offset", "[mux]") {
  std::string wire;
  std::string want1, want2;
  for (size_t i = 0; i < 4; ++i) {
    auto m = message(20 + i * 7, static_cast<char>(i));
    uint32_t conn = i % 2 == 0 ? 1 : 2;
    (conn == 1 ? want1 : want2) += m;
    appendFrames(wire, conn, m);
  }
  for (size_t a = 0; a <= wire.size(); ++a) {
    for (size_t b = a; b <= wire.size(); b += 3) {
      // One assertion per split keeps the report readable (thousands of splits).
      MuxReader r;
      bool fed = r.feed(std::string_view(wire).substr(0, a)).ok() &&
                 r.feed(std::string_view(wire).substr(a, b - a)).ok() &&
                 r.feed(std::string_view(wire).substr(b)).ok();
      INFO("split at " << a << " and " << b);
      REQUIRE((fed && r.stream(1) == want1 && r.stream(2) == want2 && !r.midFrame() &&
               r.framesRead() == 4));
    }
  }
}

TEST_CASE("large messages reassemble when fed in random pieces", "[mux]") {
  std::mt19937 rng(20241122);
  std::string wire;
  std::string want1, want2;
  const size_t sizes[] = {4096, 4097, 10 * 1024, 100, (3u << 20) + 17};
  for (size_t i = 0; i < std::size(sizes); ++i) {
    auto m = message(sizes[i], static_cast<char>(i + 7));
    uint32_t conn = i % 2 == 0 ? 2 : 1;
    (conn == 1 ? want1 : want2) += m;
    appendFrames(wire, conn, m);
  }
  for (int round = 0; round < 8; ++round) {
    MuxReader r;
    std::uniform_int_distribution<size_t> piece(1, round % 2 == 0 ? 13 : 70000);
    std::string_view rest(wire);
    bool fed = true;
    while (!rest.empty() && fed) {
      size_t n = std::min(rest.size(), piece(rng));
      fed = r.feed(rest.substr(0, n)).ok();
      rest.remove_prefix(n);
    }
    REQUIRE(fed);
    CHECK(r.stream(1) == want1);
    CHECK(r.stream(2) == want2);
    CHECK(r.framesRead() == 8);  // 1 + 2 + 2 + 1 + 2
    CHECK_FALSE(r.midFrame());
  }
}

TEST_CASE("frames of other ConnIDs are dropped and counted", "[mux]") {
  std::string wire;
  appendFrames(wire, 0, "reserved");
  appendFrames(wire, 1, "one");
  appendFrames(wire, 3, "three");
  appendFrames(wire, 2, "two");
  appendFrames(wire, 0xFFFFFFFF, message(5000, 9));
  MuxReader r;
  REQUIRE(r.feed(wire));
  CHECK(r.stream(1) == "one");
  CHECK(r.stream(2) == "two");
  CHECK(r.framesRead() == 6);
  CHECK(r.framesDropped() == 4);
}

TEST_CASE("a frame header announcing more than maxFrame is an error and stays one", "[mux]") {
  MuxReader r(1000);
  REQUIRE(r.feed(header(1, 1000) + std::string(1000, 'a')));
  auto st = r.feed(header(1, 1001));
  REQUIRE_FALSE(st);
  CHECK_THAT(st.error().message, Catch::Contains("1001"));
  CHECK_FALSE(r.feed(header(1, 1) + "b"));
  CHECK(r.stream(1) == std::string(1000, 'a'));
}

TEST_CASE("the default limit rejects a garbage length of 0xFFFFFFFF", "[mux]") {
  MuxReader r;
  CHECK_FALSE(r.feed(std::string("\x00\x00\x00\x01\xff\xff\xff\xff", 8)));
}

TEST_CASE("a frame header split across feeds is reassembled", "[mux]") {
  MuxReader r;
  std::string wire = header(2, 5) + "hello" + header(1, 3) + "abc";
  for (char c : wire) {
    REQUIRE(r.feed(std::string_view(&c, 1)));
  }
  CHECK(r.stream(2) == "hello");
  CHECK(r.stream(1) == "abc");
  MuxReader half;
  REQUIRE(half.feed(wire.substr(0, 3)));
  CHECK(half.midFrame());
  REQUIRE(half.feed(wire.substr(3, 4)));
  CHECK(half.midFrame());
  REQUIRE(half.feed(wire.substr(7)));
  CHECK(half.stream(2) == "hello");
  CHECK_FALSE(half.midFrame());
}

TEST_CASE("zero-length frames are accepted silently", "[mux]") {
  MuxReader r;
  REQUIRE(r.feed(header(1, 0) + header(2, 0) + header(1, 2) + "ok"));
  CHECK(r.stream(1) == "ok");
  CHECK(r.stream(2).empty());
  CHECK_FALSE(r.midFrame());
}

TEST_CASE("the caller consumes a stream from the front between feeds", "[mux]") {
  MuxReader r;
  REQUIRE(r.feed(header(1, 4) + "abcd"));
  r.stream(1).erase(0, 2);
  REQUIRE(r.feed(header(1, 2) + "ef"));
  CHECK(r.stream(1) == "cdef");
}

}  // namespace test_nri_mux
