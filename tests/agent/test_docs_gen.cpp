#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "agent/docs_gen.h"
#include "agent/flag_set.h"
#include "agent/options.h"

namespace test_agent_docs_gen {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

const std::string kDoc =
    "# Title\n"
    "intro\n"
    "<!-- BEGIN GENERATED: flags (make docs) -->\n"
    "old flags\n"
    "<!-- END GENERATED: flags -->\n"
    "middle\n"
    "<!-- BEGIN GENERATED: metrics (make docs) -->\n"
    "<!-- END GENERATED: metrics -->\n"
    "tail without newline";

const FlagDoc* findFlag(const std::vector<FlagDoc>& docs, const std::string& name) {
  for (const FlagDoc& d : docs) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("flag set lists its flags sorted with type, default and whether they act", "[docs]") {
  FlagSet fs;
  std::string addr = ":9316";
  bool dry = false;
  fs.stringVar(&addr, "addr", "listen address");
  fs.boolVar(&dry, "dry-run", "do nothing");
  fs.notImplemented("audit-verbose", FlagType::kInt, "3", "verbosity");
  const std::vector<FlagInfo> list = fs.list();
  REQUIRE(list.size() == 3);
  CHECK(list[0].name == "addr");
  CHECK(list[0].typeName == "string");
  CHECK(list[0].defaultText == "\":9316\"");
  CHECK(list[0].implemented);
  CHECK(list[1].name == "audit-verbose");
  CHECK_FALSE(list[1].implemented);
  CHECK(list[2].typeName == "bool");
  CHECK(list[2].defaultText == "false");
}

TEST_CASE("flag docs hold every flag once with both modes' defaults and the help builtin",
          "[docs]") {
  const std::vector<FlagDoc> docs = flagDocs();
  const FlagDoc* cgroup = findFlag(docs, "cgroup-root-dir");
  REQUIRE(cgroup != nullptr);
  CHECK(cgroup->defaultText == "\"/host-cgroup/\"");
  CHECK(cgroup->hostModeDefault == "\"/sys/fs/cgroup/\"");
  const FlagDoc* addr = findFlag(docs, "addr");
  REQUIRE(addr != nullptr);
  CHECK(addr->defaultText == addr->hostModeDefault);
  REQUIRE(findFlag(docs, "enable-pprof") != nullptr);
  CHECK_FALSE(findFlag(docs, "enable-pprof")->implemented);
  // Bound to Options but not read by anything yet: no effect, and the docs say so.
  CHECK_FALSE(findFlag(docs, "run-root-dir")->implemented);
  CHECK(findFlag(docs, "var-lib-kubelet-dir")->implemented);  // cpu_manager_state
  const FlagDoc* help = findFlag(docs, "help");
  REQUIRE(help != nullptr);
  CHECK(help->alias == "h");
  for (size_t i = 1; i + 1 < docs.size(); ++i) CHECK(docs[i - 1].name < docs[i].name);
  // Every flag --help lists is documented.
  const std::string usage = usageText();
  for (const FlagDoc& d : docs) {
    if (d.name == "help") continue;
    INFO(d.name);
    const std::string line = "  -" + d.name;
    bool listed = false;
    for (const char* after : {" ", "\n", "\t"}) {
      listed = listed || usage.find(line + after) != std::string::npos;
    }
    CHECK(listed);
  }
}

TEST_CASE("flag table keeps one line per flag and escapes what markdown would eat", "[docs]") {
  FlagDoc gates{"feature-gates", "", "mapStringBool", "", "", "A=true|false\nB=true|false", true};
  FlagDoc path{"run-root-dir", "", "string", "\"/host-run/\"", "\"/run/\"", "<dir>/x", true};
  FlagDoc off{"kube-api-qps", "", "float", "20", "20", "QPS.", false};
  const std::string md = flagsMarkdown({gates, path, off});
  CHECK(md.find("| `--feature-gates` | mapStringBool | (none) | same | A=true\\|false<br>"
                "B=true\\|false |\n") != std::string::npos);
  CHECK(
      md.find("| `--run-root-dir` | string | `\"/host-run/\"` | `\"/run/\"` | &lt;dir&gt;/x |\n") !=
      std::string::npos);
  CHECK(md.find("| `--kube-api-qps` | float | `20` | same | **Accepted, no effect.** QPS. |\n") !=
        std::string::npos);
  CHECK(md.find("NODE_NAME") != std::string::npos);
  CHECK(md.find("NRI_PLUGIN_SOCKET") != std::string::npos);
  CHECK(md.find("3 flags") != std::string::npos);
}

TEST_CASE("code spans escape pipes and take a longer fence around backticks", "[docs]") {
  CHECK(markdownCode("a|b") == "`a\\|b`");
  CHECK(markdownCode("a`b") == "``a`b``");
  CHECK(markdownCode("`a") == "`` `a ``");
  CHECK(markdownCode("").empty());
}

TEST_CASE("splicing a block replaces only the text between its markers", "[docs]") {
  auto out = spliceBlock(kDoc, "flags", "\nnew\n\n");
  REQUIRE(out);
  const std::string want =
      "# Title\n"
      "intro\n"
      "<!-- BEGIN GENERATED: flags (make docs) -->\n"
      "\nnew\n\n"
      "<!-- END GENERATED: flags -->\n"
      "middle\n"
      "<!-- BEGIN GENERATED: metrics (make docs) -->\n"
      "<!-- END GENERATED: metrics -->\n"
      "tail without newline";
  CHECK(*out == want);
  auto again = spliceBlock(*out, "metrics", "m\n");
  REQUIRE(again);
  CHECK(again->find("-->\nm\n<!-- END GENERATED: metrics -->\ntail without newline") !=
        std::string::npos);
  // Splicing what is there changes nothing.
  auto same = spliceBlock(*again, "flags", "\nnew\n\n");
  REQUIRE(same);
  CHECK(*same == *again);
}

TEST_CASE("a block's name must match whole, so flags does not match flags2", "[docs]") {
  const std::string doc =
      "<!-- BEGIN GENERATED: flags2 -->\nx\n<!-- END GENERATED: flags2 -->\n"
      "<!-- BEGIN GENERATED: flags -->\ny\n<!-- END GENERATED: flags -->\n";
  auto span = findBlock(doc, "flags");
  REQUIRE(span);
  CHECK(doc.substr(span->begin, span->end - span->begin) == "y\n");
  CHECK(span->firstLine == 5);
}

TEST_CASE("missing, doubled or reversed markers are errors naming the marker", "[docs]") {
  auto none = findBlock("# nothing\n", "flags");
  REQUIRE_FALSE(none);
  CHECK(none.error().message.find("<!-- BEGIN GENERATED: flags") != std::string::npos);
  CHECK(none.error().message.find("<!-- END GENERATED: flags -->") != std::string::npos);

  auto noEnd = findBlock("<!-- BEGIN GENERATED: flags -->\nx\n", "flags");
  REQUIRE_FALSE(noEnd);
  CHECK(noEnd.error().message.find("<!-- END GENERATED: flags -->") != std::string::npos);

  auto noBegin = findBlock("x\n<!-- END GENERATED: flags -->\n", "flags");
  REQUIRE_FALSE(noBegin);
  CHECK(noBegin.error().message.find("BEGIN GENERATED: flags") != std::string::npos);

  auto reversed =
      findBlock("<!-- END GENERATED: flags -->\n<!-- BEGIN GENERATED: flags -->\n", "flags");
  REQUIRE_FALSE(reversed);
  CHECK(reversed.error().message.find("before") != std::string::npos);

  auto twice = findBlock(
      "<!-- BEGIN GENERATED: flags -->\n<!-- END GENERATED: flags -->\n"
      "<!-- BEGIN GENERATED: flags -->\n<!-- END GENERATED: flags -->\n",
      "flags");
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message.find("twice") != std::string::npos);
}

TEST_CASE("check names the block and the first differing line with its line number", "[docs]") {
  auto same = blockDifference(kDoc, "flags", "old flags\n");
  REQUIRE(same);
  CHECK(same->empty());

  auto changed = blockDifference(kDoc, "flags", "new flags\n");
  REQUIRE(changed);
  CHECK(changed->find("block 'flags' differs at line 4") != std::string::npos);
  CHECK(changed->find("\"old flags\"") != std::string::npos);
  CHECK(changed->find("\"new flags\"") != std::string::npos);

  auto longer = blockDifference(kDoc, "flags", "old flags\nmore\n");
  REQUIRE(longer);
  CHECK(longer->find("line 5") != std::string::npos);
  CHECK(longer->find("(the block ends here)") != std::string::npos);

  auto newline = blockDifference(kDoc, "flags", "old flags");
  REQUIRE(newline);
  CHECK_FALSE(newline->empty());

  auto missing = blockDifference("no markers\n", "metrics", "x");
  REQUIRE_FALSE(missing);
}

TEST_CASE("a block body is the markdown framed by blank lines", "[docs]") {
  CHECK(blockBody("| a |\n") == "\n| a |\n\n");
  CHECK(blockBody("| a |") == "\n| a |\n\n");
}

}  // namespace test_agent_docs_gen
