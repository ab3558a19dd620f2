// The NRI transport alone, without a session: mux frames reassembled into the two
// connection streams, each taken apart into ttrpc messages whose envelopes are
// decoded as the session decodes them. Faster than the session target, so the
// framing code gets most of the executions.
#include "fuzz/fuzz_support.h"
#include "nri/api.h"
#include "nri/mux.h"
#include "nri/ttrpc.h"

namespace kn = koord::nri;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  const std::string_view in = koord::fuzz::text(data, size);
  kn::MuxReader reader(1u << 20);
  size_t at = 0;
  while (at < in.size()) {
    const size_t n = std::min<size_t>(in.size() - at, 1 + static_cast<uint8_t>(in[at]));
    const bool ok = reader.feed(in.substr(at, n)).ok();
    at += n;
    if (!ok) return 0;
  }
  for (uint32_t conn : {kn::kPluginServiceConn, kn::kRuntimeServiceConn}) {
    std::string& stream = reader.stream(conn);
    for (;;) {
      auto msg = kn::nextMessage(stream);
      if (!msg.ok() || !*msg) break;
      const auto& m = **msg;
      if (m.type == kn::MessageType::kRequest) {
        kn::wire::Request req;
        if (req.ParseFromString(m.data)) {
          // Re-encoding what was decoded gives a message the reader takes back.
          std::string again = kn::encodeMessage(
              m.streamId, m.type, kn::encodeRequest(req.service(), req.method(), req.payload(), 0));
          auto back = kn::nextMessage(again);
          if (!back.ok() || !*back || !again.empty()) __builtin_trap();
        }
      } else if (m.type == kn::MessageType::kResponse) {
        kn::wire::Response res;
        (void)res.ParseFromString(m.data);
      }
    }
  }
  return 0;
}
