// Where the agent looks for NVML when the loader does not find it by name
// (gpu/nvml_search.h): the toolkit's CDI mounts, GKE's and the GPU operator's dirs.
#include <catch2/catch.hpp>

#include <map>

#include "gpu/nvml_search.h"
#include "tests/support/temp_tree.h"

namespace test_gpu_nvml_search {  // this file's own names: tests build as unity chunks

using namespace koord;

TEST_CASE("the link the toolkit makes is tried before any versioned file", "[gpu][nvml]") {
  CHECK(pickNvmlFiles({"libnvidia-ml.so.550.54.15", "libnvidia-ml.so.1", "libc.so.6"}) ==
        std::vector<std::string>{"libnvidia-ml.so.1", "libnvidia-ml.so.550.54.15"});
}

TEST_CASE("without the link the highest driver version CDI mounted is tried first", "[gpu][nvml]") {
  // Compared as numbers: 535.261.03 is newer than 535.54.03, though less as text.
  CHECK(pickNvmlFiles(
            {"libnvidia-ml.so.535.54.03", "libnvidia-ml.so.535.261.03", "libnvidia-ml.so"}) ==
        std::vector<std::string>{"libnvidia-ml.so.535.261.03", "libnvidia-ml.so.535.54.03"});
}

TEST_CASE("names that are no driver's library are not taken", "[gpu][nvml]") {
  CHECK(pickNvmlFiles({"libnvidia-ml.so", "libnvidia-ml.so.1.x", "libnvidia-ml.so.550.",
                       "libnvidia-ml.so.abc", "libnvidia-mlx.so.1", "libnvidia-ml.so.7"})
            .empty());
  CHECK(pickNvmlFiles({}).empty());
}

TEST_CASE("the search covers the image's own dir, the RPM hosts' and the driver container's",
          "[gpu][nvml]") {
  const auto dirs = nvmlSearchDirs("/host-run/", "x86_64");
  REQUIRE(dirs.size() == 9);
  CHECK(dirs.front() == "/usr/lib/x86_64-linux-gnu");
  CHECK(dirs[1] == "/usr/lib64");
  CHECK(std::find(dirs.begin(), dirs.end(), "/usr/local/nvidia/lib64") != dirs.end());
  CHECK(dirs.back() == "/host-run/nvidia/driver/usr/lib64");
  CHECK(nvmlSearchDirs("/host-run", "aarch64")[7] ==
        "/host-run/nvidia/driver/usr/lib/aarch64-linux-gnu");
}

TEST_CASE("every dir's libraries are listed in the search's order", "[gpu][nvml]") {
  const std::map<std::string, std::vector<std::string>> fs{
      {"/usr/lib/x86_64-linux-gnu", {"libc.so.6"}},
      {"/usr/lib64", {"libnvidia-ml.so.550.54.15"}},
      {"/usr/local/nvidia/lib64", {"libnvidia-ml.so.1"}}};
  auto list = [&](const std::string& d) {
    auto it = fs.find(d);
    return it == fs.end() ? std::vector<std::string>{} : it->second;
  };
  CHECK(findNvml(nvmlSearchDirs("/host-run/", "x86_64"), list) ==
        std::vector<std::string>{"/usr/lib64/libnvidia-ml.so.550.54.15",
                                 "/usr/local/nvidia/lib64/libnvidia-ml.so.1"});
  CHECK(findNvml({"/usr/lib/x86_64-linux-gnu", "/nowhere"}, list).empty());
}

TEST_CASE("a dir's names are listed from the real filesystem, none when it is absent",
          "[gpu][nvml]") {
  test::TempTree tree({{"lib/libnvidia-ml.so.550.54.15", "x"}, {"lib/other", "y"}});
  auto names = listDirNames(tree.path() + "/lib");
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"libnvidia-ml.so.550.54.15", "other"});
  CHECK(listDirNames(tree.path() + "/absent").empty());
  CHECK(findNvml({tree.path() + "/absent", tree.path() + "/lib"}, listDirNames) ==
        std::vector<std::string>{tree.path() + "/lib/libnvidia-ml.so.550.54.15"});
}

}  // namespace test_gpu_nvml_search
