// docs_gen: docs/reference.md's generated sections. The text between
//   <!-- BEGIN GENERATED: <name> ... -->   and   <!-- END GENERATED: <name> -->
// is owned by koordlet-docs (`make docs` rewrites it, the docs-in-sync test checks
// it); everything outside the markers is left byte for byte. This module holds the
// pure parts: the flag table's markdown, markdown escaping, and the marker splicing
// and comparison, so tests need no files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/options.h"
#include "base/markdown.h"
#include "base/result.h"

namespace koord {

// The flags block: a line on defaults and the environment, then one table row per
// flag (flag | type | default | default with agent_mode=hostMode | meaning).
std::string flagsMarkdown(const std::vector<FlagDoc>& flags);

// What sits between a block's markers: the generated markdown framed by one blank
// line on each side, so the markers stay apart from the table.
std::string blockBody(std::string_view markdown);

// Where a block's body lies in a document: [begin, end) byte offsets, and the
// 1-based line of its first byte.
struct BlockSpan {
  size_t begin = 0;
  size_t end = 0;
  size_t firstLine = 1;
};
// Finds the block `name`; errors name the missing or misplaced marker.
Result<BlockSpan> findBlock(std::string_view doc, std::string_view name);
// `doc` with the body of block `name` replaced by `body`; all else unchanged.
Result<std::string> spliceBlock(std::string_view doc, std::string_view name, std::string_view body);
// "" when block `name` of `doc` holds `body`; else what differs: the first
// differing line, with its line number in the document, as it is and as generated.
Result<std::string> blockDifference(std::string_view doc, std::string_view name,
                                    std::string_view body);

}  // namespace koord
