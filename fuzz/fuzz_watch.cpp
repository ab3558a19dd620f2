// A watch response body as it arrives: fed to the decoder in chunks whose sizes
// come from the input's bytes (events need not align with reads), each decoded
// object then read as the agent reads it (fuzz/api_objects.h).
#include "fuzz/api_objects.h"
#include "fuzz/fuzz_support.h"
#include "kube/watch_stream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  koord::fuzz::quietLogs();
  const std::string_view in = koord::fuzz::text(data, size);
  // A small bound as well, so the over-size path is reached.
  koord::WatchDecoder decoder("watch fuzz", 64u << 10);
  size_t at = 0;
  while (at < in.size()) {
    // Chunk length 1..256 from the byte at the cut, so splits vary with the input.
    const size_t n = std::min<size_t>(in.size() - at, 1 + static_cast<uint8_t>(in[at]));
    auto events = decoder.feed(in.substr(at, n));
    at += n;
    if (!events.ok()) break;
    for (const auto& e : *events) {
      (void)koord::toString(e.type);
      koord::fuzz::applyApiObject(e.object);
    }
  }
  (void)decoder.finish();
  return 0;
}
