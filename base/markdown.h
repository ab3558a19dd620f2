// markdown: escaping text for one cell of a GitHub-flavoured markdown table, for
// the reference tables docs/reference.md carries (flags, metrics).
#pragma once

#include <string>
#include <string_view>

namespace koord {

// Text for one markdown table cell on one line: '|' escaped, '<' and '>' as
// entities (so "<dir>" is not taken for an HTML tag), newlines as <br>.
std::string markdownCell(std::string_view text);
// `text` as a code span in a table cell ('|' escaped, which GFM tables allow even
// inside code spans); "" gives an empty cell.
std::string markdownCode(std::string_view text);

}  // namespace koord
