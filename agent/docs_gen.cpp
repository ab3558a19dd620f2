#include "agent/docs_gen.h"

#include <algorithm>

namespace koord {
namespace {

constexpr std::string_view kBegin = "<!-- BEGIN GENERATED: ";
constexpr std::string_view kEnd = "<!-- END GENERATED: ";

size_t lineOf(std::string_view doc, size_t offset) {
  return 1 + static_cast<size_t>(std::count(doc.begin(), doc.begin() + offset, '\n'));
}

// Offset of the line starting with `prefix` + name followed by a space or "-->",
// npos when there is none; `second` gets the next such line's offset.
size_t findMarker(std::string_view doc, std::string_view prefix, std::string_view name,
                  size_t* second) {
  size_t found = std::string_view::npos;
  *second = std::string_view::npos;
  for (size_t pos = 0; pos < doc.size();) {
    const size_t eol = std::min(doc.find('\n', pos), doc.size());
    const std::string_view line = doc.substr(pos, eol - pos);
    if (line.substr(0, prefix.size()) == prefix) {
      const std::string_view rest = line.substr(prefix.size());
      if (rest.substr(0, name.size()) == name &&
          (rest.size() == name.size() || rest[name.size()] == ' ' ||
           rest.substr(name.size(), 3) == "-->")) {
        if (found == std::string_view::npos) {
          found = pos;
        } else if (*second == std::string_view::npos) {
          *second = pos;
        }
      }
    }
    pos = eol + 1;
  }
  return found;
}

std::string_view lineAt(std::string_view text, size_t pos) {
  const size_t eol = std::min(text.find('\n', pos), text.size());
  return text.substr(pos, eol - pos);
}

}  // namespace

std::string flagsMarkdown(const std::vector<FlagDoc>& flags) {
  const auto noEffect =
      std::count_if(flags.begin(), flags.end(), [](const FlagDoc& f) { return !f.implemented; });
  std::string out;
  out += std::to_string(flags.size()) +
         " flags, as `koordlet --help` lists them; they take one or two dashes, `-name=value` or "
         "`-name value` (a boolean only `-name=false`), as Go's flag package. " +
         std::to_string(noEffect) +
         " are accepted for koordlet compatibility and have no effect (the agent warns once "
         "about each one given). Defaults are the DaemonSet's; with the environment variable "
         "`agent_mode=hostMode` (the agent runs on the host, not in a pod) the host path "
         "defaults are the host's own, as the fourth column shows. The environment also gives "
         "`NODE_NAME` (the node's name; else the hostname), `NODE_IP` (the kubelet's "
         "address unless `--kubelet-addr`; without either, the Node's address of "
         "`--kubelet-preferred-address-type` when there is an API server), "
         "`KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` (in a pod without "
         "`--kubeconfig`: the API server, with the service account's token and CA from "
         "`--service-account-dir`; neither: standalone, no API server); when the container "
         "runtime launches the agent as a "
         "pre-installed NRI plugin, `NRI_PLUGIN_SOCKET` (the connected socket's fd: the NRI "
         "plugin is on), `NRI_PLUGIN_IDX` and `NRI_PLUGIN_NAME` (they override "
         "`--runtime-hooks-nri-plugin-index` and `--runtime-hooks-nri-plugin-name`).\n\n";
  out += "| flag | type | default | default with `agent_mode=hostMode` | meaning |\n";
  out += "|---|---|---|---|---|\n";
  auto defaultCell = [](const std::string& text) {
    return text.empty() ? std::string("(none)") : markdownCode(text);
  };
  for (const FlagDoc& f : flags) {
    std::string name = markdownCode("--" + f.name);
    if (!f.alias.empty()) name += ", " + markdownCode("-" + f.alias);
    const std::string host =
        f.hostModeDefault == f.defaultText ? "same" : defaultCell(f.hostModeDefault);
    std::string meaning = f.implemented ? "" : "**Accepted, no effect.** ";
    meaning += markdownCell(f.help);
    out += "| " + name + " | " + markdownCell(f.typeName) + " | " + defaultCell(f.defaultText) +
           " | " + host + " | " + meaning + " |\n";
  }
  return out;
}

std::string blockBody(std::string_view markdown) {
  std::string out = "\n";
  out += markdown;
  if (!out.empty() && out.back() != '\n') out += "\n";
  out += "\n";
  return out;
}

Result<BlockSpan> findBlock(std::string_view doc, std::string_view name) {
  const std::string beginText = std::string(kBegin) + std::string(name);
  const std::string endText = std::string(kEnd) + std::string(name) + " -->";
  size_t secondBegin = 0;
  size_t secondEnd = 0;
  const size_t begin = findMarker(doc, kBegin, name, &secondBegin);
  const size_t end = findMarker(doc, kEnd, name, &secondEnd);
  if (begin == std::string_view::npos && end == std::string_view::npos) {
    return makeError("markers of block '" + std::string(name) + "' missing: want a line \"" +
                     beginText + " ... -->\" and a line \"" + endText + "\"");
  }
  if (begin == std::string_view::npos) {
    return makeError("marker missing: a line \"" + beginText + " ... -->\" before line " +
                     std::to_string(lineOf(doc, end)));
  }
  if (end == std::string_view::npos) {
    return makeError("marker missing: a line \"" + endText + "\" after line " +
                     std::to_string(lineOf(doc, begin)));
  }
  if (secondBegin != std::string_view::npos || secondEnd != std::string_view::npos) {
    const size_t at = secondBegin != std::string_view::npos ? secondBegin : secondEnd;
    return makeError("block '" + std::string(name) + "' marked twice (again at line " +
                     std::to_string(lineOf(doc, at)) + ")");
  }
  if (end < begin) {
    return makeError("marker \"" + endText + "\" (line " + std::to_string(lineOf(doc, end)) +
                     ") comes before its BEGIN marker (line " + std::to_string(lineOf(doc, begin)) +
                     ")");
  }
  if (lineAt(doc, begin).find("-->") == std::string_view::npos) {
    return makeError("marker \"" + beginText + "\" (line " + std::to_string(lineOf(doc, begin)) +
                     ") must end with \"-->\" on its line");
  }
  BlockSpan span;
  span.begin = std::min(doc.find('\n', begin), doc.size() - 1) + 1;
  span.end = end;
  span.firstLine = lineOf(doc, begin) + 1;
  return span;
}

Result<std::string> spliceBlock(std::string_view doc, std::string_view name,
                                std::string_view body) {
  auto span = findBlock(doc, name);
  if (!span) return span.error();
  std::string out;
  out.reserve(doc.size() + body.size());
  out.append(doc.substr(0, span->begin));
  out.append(body);
  out.append(doc.substr(span->end));
  return out;
}

Result<std::string> blockDifference(std::string_view doc, std::string_view name,
                                    std::string_view body) {
  auto span = findBlock(doc, name);
  if (!span) return span.error();
  const std::string_view have = doc.substr(span->begin, span->end - span->begin);
  if (have == body) return std::string();
  size_t line = span->firstLine;
  size_t a = 0;
  size_t b = 0;
  while (true) {
    const std::string_view lineHave = a < have.size() ? lineAt(have, a) : std::string_view();
    const std::string_view lineWant = b < body.size() ? lineAt(body, b) : std::string_view();
    const bool haveEnded = a >= have.size();
    const bool wantEnded = b >= body.size();
    if (haveEnded && wantEnded) {  // same lines; only the last one's newline differs
      return "block '" + std::string(name) + "' differs at line " + std::to_string(line - 1) +
             ": a newline at its end";
    }
    if (lineHave != lineWant || haveEnded != wantEnded) {
      auto show = [](bool ended, std::string_view text) {
        if (ended) return std::string("(the block ends here)");
        // Appended, not concatenated: g++ 12 -O3 misreports "\"" + s as overlapping.
        std::string quoted(1, '"');
        quoted.append(text).push_back('"');
        return quoted;
      };
      return "block '" + std::string(name) + "' differs at line " + std::to_string(line) +
             ":\n  the file has: " + show(haveEnded, lineHave) +
             "\n  generated:    " + show(wantEnded, lineWant);
    }
    a += lineHave.size() + 1;
    b += lineWant.size() + 1;
    ++line;
  }
}

}  // namespace koord
