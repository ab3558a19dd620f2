// What the container runtime sends an NRI plugin: mux frames carrying ttrpc messages
// whose payloads are NRI protobuf requests and replies, fed (split where the input's
// bytes say) to a PluginSession answered by the agent's own NriHooks over a published
// state with every hook on. Our replies are decoded back as the runtime would.
#include <memory>

#include "fuzz/fuzz_hook_state.h"
#include "fuzz/fuzz_support.h"
#include "nri/nri_hooks.h"
#include "nri/plugin_session.h"

namespace kn = koord::nri;

namespace {

// Our replies must always be frames the runtime can take apart.
void checkOutput(const std::string& out) {
  kn::MuxReader reader;
  if (!reader.feed(out).ok() || reader.midFrame()) __builtin_trap();
  for (uint32_t conn : {kn::kPluginServiceConn, kn::kRuntimeServiceConn}) {
    std::string& stream = reader.stream(conn);
    for (;;) {
      auto msg = kn::nextMessage(stream);
      if (!msg.ok()) __builtin_trap();
      if (!*msg) break;
    }
    if (!stream.empty()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  const std::string_view in = koord::fuzz::text(data, size);
  kn::NriHooks hooks(koord::fuzz::hookStore(), nullptr, koord::FailurePolicy::kIgnore);
  kn::PluginSession session(kn::SessionConfig{}, hooks);
  (void)session.start();
  // Reads of up to 4 KiB, as a socket returns them, cut where the input's bytes say.
  size_t at = 0;
  while (at < in.size()) {
    const size_t n = std::min<size_t>(in.size() - at, 1 + (static_cast<uint8_t>(in[at]) << 4));
    auto out = session.receive(in.substr(at, n));
    at += n;
    if (!out.ok()) break;
    checkOutput(*out);
    if (session.phase() == kn::PluginSession::Phase::kFailed) break;
  }
  return 0;
}
