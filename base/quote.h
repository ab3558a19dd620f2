// quoteText: how error messages show untrusted input (a flag value, a field of a
// kernel file): in double quotes, with quotes, backslashes and every byte outside
// printable ASCII escaped as \xNN, and cut after maxBytes ("..." plus the full
// length), so garbage can neither flood a log line nor break it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace koord {

std::string quoteText(std::string_view text, size_t maxBytes = 256);

}  // namespace koord
