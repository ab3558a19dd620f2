// koordlet-docs: docs/reference.md's flag and metric reference, generated from the code.
//   koordlet-docs flags            the flags block's markdown
//   koordlet-docs metrics          the metrics block's markdown
//   koordlet-docs update FILE      rewrites both blocks of FILE in place (make docs)
//   koordlet-docs check FILE       exit 0 when both blocks are current, else 1 saying
//                                  which differs and where (the docs-in-sync test)
// Any failure to generate (a metric family without a series) exits 1 naming it.
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "agent/docs_gen.h"
#include "agent/options.h"
#include "base/read_file.h"
#include "metrics/metric_docs.h"

namespace {

constexpr const char* kUsage =
    "usage: koordlet-docs flags | metrics | update docs/reference.md | check docs/reference.md\n";

struct Block {
  const char* name;
  std::string markdown;
};

koord::Result<std::vector<Block>> generate() {
  auto metrics = koord::exporterMetricDocs();
  if (!metrics) return metrics.error();
  return std::vector<Block>{{"flags", koord::flagsMarkdown(koord::flagDocs())},
                            {"metrics", koord::metricsMarkdown(*metrics)}};
}

int fail(const std::string& message) {
  std::cerr << "koordlet-docs: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return fail(std::string("no command\n") + kUsage);
  const std::string& command = args[0];
  const bool print = command == "flags" || command == "metrics";
  if (!(print && args.size() == 1) &&
      !((command == "update" || command == "check") && args.size() == 2)) {
    return fail(std::string("bad arguments\n") + kUsage);
  }

  auto blocks = generate();
  if (!blocks) return fail(blocks.error().message);
  if (print) {
    for (const Block& b : *blocks) {
      if (b.name == command) std::cout << b.markdown;
    }
    return 0;
  }

  const std::string& path = args[1];
  auto text = koord::readFile(path);
  if (!text) return fail(text.error().message);

  if (command == "check") {
    bool current = true;
    for (const Block& b : *blocks) {
      auto diff = koord::blockDifference(*text, b.name, koord::blockBody(b.markdown));
      if (!diff) return fail(path + ": " + diff.error().message);
      if (!diff->empty()) {
        std::cerr << path << ": " << *diff << "\n";
        current = false;
      }
    }
    if (!current) {
      return fail(path + " is out of date with the code; run `make docs` and commit the result");
    }
    return 0;
  }

  std::string updated = *text;
  for (const Block& b : *blocks) {
    auto spliced = koord::spliceBlock(updated, b.name, koord::blockBody(b.markdown));
    if (!spliced) return fail(path + ": " + spliced.error().message);
    updated = std::move(*spliced);
  }
  if (updated == *text) return 0;
  // Replaced whole, so an interrupted run leaves the file as it was.
  if (auto st = koord::replaceFile(path, updated); !st) return fail(st.error().message);
  std::cout << "koordlet-docs: updated " << path << "\n";
  return 0;
}
