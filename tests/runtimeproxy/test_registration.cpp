// koordlet.json (runtimeproxy/registration.h): the stages the enabled hooks use,
// byte for byte as koordlet's Go writes the file, written atomically and only
// when its content changes.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/read_file.h"
#include "runtimeproxy/registration.h"
#include "tests/support/temp_tree.h"

namespace test_runtimeproxy_registration {  // this file's own names: tests build as unity chunks

using namespace koord;
using namespace koord::runtimeproxy;

TEST_CASE("the registered stages are those of the enabled hooks, minus the disabled ones",
          "[registration]") {
  const std::vector<HookName> all(std::begin(kAllHooks), std::end(kAllHooks));
  CHECK(registeredStages(all, {}) == std::vector<HookStage>{HookStage::kPreRunPodSandbox,
                                                            HookStage::kPreCreateContainer,
                                                            HookStage::kPreUpdateContainerResources,
                                                            HookStage::kPreRemoveRunPodSandbox});
  // Without Resctrl nothing runs at PreRemoveRunPodSandbox.
  const std::vector<HookName> noResctrl = {HookName::kBatchResource, HookName::kCpusetAllocator};
  const std::vector<HookStage> disabled = {HookStage::kPreUpdateContainerResources};
  CHECK(registeredStages(noResctrl, disabled) ==
        std::vector<HookStage>{HookStage::kPreRunPodSandbox, HookStage::kPreCreateContainer});
  // CPU burst alone still needs the create stages; nothing enabled: none.
  const std::vector<HookName> burst = {HookName::kCpuBurst};
  CHECK(registeredStages(burst, {}) ==
        std::vector<HookStage>{HookStage::kPreRunPodSandbox, HookStage::kPreCreateContainer});
  CHECK(registeredStages({}, {}).empty());
}

TEST_CASE("koordlet.json is laid out as Go's MarshalIndent with a tab writes it",
          "[registration]") {
  const std::vector<HookStage> stages = {HookStage::kPreRunPodSandbox,
                                         HookStage::kPreCreateContainer};
  CHECK(registrationJson("/var/run/koordlet/koordlet.sock", "Ignore", stages) ==
        "{\n"
        "\t\"remote-endpoint\": \"/var/run/koordlet/koordlet.sock\",\n"
        "\t\"failure-policy\": \"Ignore\",\n"
        "\t\"runtime-hooks\": [\n"
        "\t\t\"PreRunPodSandbox\",\n"
        "\t\t\"PreCreateContainer\"\n"
        "\t]\n"
        "}");
  // omitempty: no stages, no key; nothing at all: {}.
  CHECK(registrationJson("/s", "Fail", {}) ==
        "{\n\t\"remote-endpoint\": \"/s\",\n\t\"failure-policy\": \"Fail\"\n}");
  CHECK(registrationJson("", "", {}) == "{}");
  // A path with a quote is escaped, and the whole is JSON the proxy reads.
  auto j = nlohmann::json::parse(registrationJson("/a\"b", "Ignore", stages));
  CHECK(j["remote-endpoint"] == "/a\"b");
  CHECK(j["runtime-hooks"].size() == 2);
}

TEST_CASE("the registration is written into a new directory, and not again when unchanged",
          "[registration]") {
  koord::test::TempTree tmp;
  const std::string dir = tmp.path() + "/etc/runtime/hookserver.d";
  auto first = writeRegistration(dir, "{}");
  REQUIRE(first.ok());
  CHECK(*first);
  const std::string file = dir + "/koordlet.json";
  struct stat before {};
  REQUIRE(::stat(file.c_str(), &before) == 0);
  CHECK((before.st_mode & 0777) == 0644);
  auto second = writeRegistration(dir, "{}");
  REQUIRE(second.ok());
  CHECK_FALSE(*second);
  struct stat after {};
  REQUIRE(::stat(file.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);  // not replaced
  auto third = writeRegistration(dir, "{\n}");
  REQUIRE(third.ok());
  CHECK(*third);
  CHECK(readFile(file).value() == "{\n}");
  // Nothing else is left in the directory (the temporary file is renamed).
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  CHECK(entries == 1);
}

TEST_CASE("a registration that cannot be written names the path", "[registration]") {
  koord::test::TempTree tmp;
  const std::string blocker = tmp.path() + "/file";
  REQUIRE(replaceFile(blocker, "x").ok());
  auto r = writeRegistration(blocker + "/hookserver.d", "{}");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find(blocker) != std::string::npos);
}

}  // namespace test_runtimeproxy_registration
