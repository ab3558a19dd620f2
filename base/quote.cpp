#include "base/quote.h"

#include <algorithm>

namespace koord {

std::string quoteText(std::string_view text, size_t maxBytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const size_t shown = std::min(text.size(), maxBytes);
  std::string out = "\"";
  for (size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (shown < text.size()) out += "...";
  out += '"';
  if (shown < text.size()) out += " (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace koord
