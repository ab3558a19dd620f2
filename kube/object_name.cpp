#include "kube/object_name.h"

namespace koord {
namespace {

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

bool isDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

bool isDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    const std::string_view label =
        s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    // No 63-character limit per part: apimachinery's subdomain check has only the
    // total one.
    if (label.empty() || !alnum(label.front()) || !alnum(label.back())) return false;
    for (char c : label) {
      if (!alnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

}  // namespace koord
