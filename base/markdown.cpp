#include "base/markdown.h"

namespace koord {

std::string markdownCell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '|':
        out += "\\|";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\n':
        out += "<br>";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string markdownCode(std::string_view text) {
  if (text.empty()) return "";
  std::string body;
  for (char c : text) {
    if (c == '|') {
      body += "\\|";
    } else {
      body.push_back(c == '\n' ? ' ' : c);
    }
  }
  // A backtick inside needs a longer fence (and a space when it is at an end).
  const bool tick = body.find('`') != std::string::npos;
  const std::string fence = tick ? "``" : "`";
  const std::string pad = tick && (body.front() == '`' || body.back() == '`') ? " " : "";
  return fence + pad + body + pad + fence;
}

}  // namespace koord
