// NvmlLibrary (gpu/nvml_library.cpp) against the NVML stand-in (tests/fake_nvml):
// what the agent does with the driver's library as the dynamic loader gives it,
// its functions' return codes, buffers and events.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gpu/nvml_library.h"
#include "tests/support/temp_tree.h"

namespace test_gpu_nvml_library {  // this file's own names: tests build as unity chunks

using namespace koord;
using nlohmann::json;

namespace {

std::string fakeNvml() {
  const char* path = std::getenv("KOORDLET_FAKE_NVML");
  REQUIRE(path != nullptr);  // set by meson: the stand-in's path
  return path;
}

// The node the stand-in shows: written to a file it reads at each call.
class FakeNode {
 public:
  explicit FakeNode(const json& state) : dir_({{"state.json", state.dump()}, {"events", ""}}) {
    ::setenv("FAKE_NVML_STATE", (dir_.path() + "/state.json").c_str(), 1);
    ::setenv("FAKE_NVML_EVENTS", (dir_.path() + "/events").c_str(), 1);
  }
  ~FakeNode() {
    ::unsetenv("FAKE_NVML_STATE");
    ::unsetenv("FAKE_NVML_EVENTS");
  }
  void event(const std::string& line) {
    std::ofstream(dir_.path() + "/events", std::ios::app) << line << "\n";
  }

 private:
  test::TempTree dir_;
};

json twoH100s() {
  return {{"driver", "535.261.03"},
          {"cuda", 12020},
          {"devices",
           {{{"uuid", "GPU-0f6c1f7a-0000-0000-0000-000000000000"},
             {"minor", 0},
             {"name", "NVIDIA H100 80GB HBM3"},
             {"memTotal", 85899345920ull},
             {"memUsed", 1073741824ull},
             {"util", 37},
             {"busId", "00000000:1B:00.0"}},
            {{"uuid", "GPU-9a2b5c3d-0000-0000-0000-000000000000"},
             {"minor", 1},
             {"name", "NVIDIA H100 80GB HBM3"},
             {"memTotal", 85899345920ull},
             {"busId", "00000000:9A:00.0"},
             {"memoryRc", 15}}}}};
}

}  // namespace

TEST_CASE("an NVML whose init fails is unloaded with its message kept", "[gpu][nvml]") {
  // The driver's library without a loaded driver (a GPU node whose module did not
  // load): nvmlInit_v2 says 9. Its message lives in the library, which is unloaded
  // before the error is returned (the real R535 library crashed the agent here).
  FakeNode node(json{{"init", 9}});
  auto lib = loadNvml(fakeNvml());
  REQUIRE_FALSE(lib.ok());
  CHECK(lib.error().message == "nvmlInit_v2: Driver Not Loaded (9)");
}

TEST_CASE("NVML's GPUs are read with their facts; one whose memory cannot be read is unhealthy",
          "[gpu][nvml]") {
  FakeNode node(twoH100s());
  auto lib = loadNvml(fakeNvml());
  REQUIRE(lib.ok());
  auto system = (*lib)->system();
  REQUIRE(system.ok());
  CHECK(*system == GpuSystemInfo{"535.261.03", "12.2"});
  auto devices = (*lib)->devices();
  REQUIRE(devices.ok());
  REQUIRE(devices->size() == 2);
  const GpuDeviceInfo& first = (*devices)[0];
  CHECK(first.uuid == "GPU-0f6c1f7a-0000-0000-0000-000000000000");
  CHECK(first.minor == 0);
  CHECK(first.model == "NVIDIA H100 80GB HBM3");
  CHECK(first.memoryTotal == 85899345920ull);
  CHECK(first.busId == "0000:1b:00.0");
  CHECK(first.healthy);
  CHECK_FALSE((*devices)[1].healthy);
  CHECK((*devices)[1].unhealthyReason == "nvmlDeviceGetMemoryInfo: GPU is lost (15)");
  // Its use cannot be read either: an error naming the call and the GPU.
  auto lost = (*lib)->usage(1, 0);
  REQUIRE_FALSE(lost.ok());
  CHECK(lost.error().message == "NVML nvmlDeviceGetMemoryInfo(1): GPU is lost (15)");
}

TEST_CASE("a GPU's processes past the first buffer are read, with the cores sampled for them",
          "[gpu][nvml]") {
  // 100 processes: more than the first buffer (64) holds, so the driver says how
  // many and the second call reads them all. Every other one has a core sample.
  json state = twoH100s();
  json processes = json::array();
  for (unsigned pid = 1000; pid < 1100; ++pid) {
    json p = {{"pid", pid}, {"mem", 1048576ull * pid}};
    if (pid % 2 == 0) p["sm"] = pid % 100;
    processes.push_back(p);
  }
  state["devices"][0]["processes"] = processes;
  FakeNode node(state);
  auto lib = loadNvml(fakeNvml());
  REQUIRE(lib.ok());
  auto use = (*lib)->usage(0, 0);
  REQUIRE(use.ok());
  CHECK(use->coreUtil == 37);
  CHECK(use->memoryUsed == 1073741824ull);
  REQUIRE(use->processes.size() == 100);
  CHECK(use->processes[0] == GpuProcessUsage{1000, 1048576ull * 1000, 0u});
  CHECK(use->processes[1] == GpuProcessUsage{1001, 1048576ull * 1001, std::nullopt});
  CHECK(use->processes[99].smUtil == std::nullopt);
  CHECK(use->processes[98].smUtil == 98u);
}

TEST_CASE("the driver's critical errors are watched per GPU and named by it", "[gpu][nvml]") {
  json state = twoH100s();
  state["devices"][1].erase("memoryRc");
  // A third GPU too old for events (the driver says Not Supported when it is
  // registered), a fourth whose supported events hold no Xid.
  state["devices"].push_back({{"uuid", "GPU-old"}, {"minor", 2}, {"registerRc", 3}});
  state["devices"].push_back({{"uuid", "GPU-noxid"}, {"minor", 3}, {"supportedEvents", 2}});
  FakeNode node(state);
  auto lib = loadNvml(fakeNvml());
  REQUIRE(lib.ok());
  auto start = (*lib)->watchHealth();
  REQUIRE(start.ok());
  CHECK(start->unwatched ==
        std::vector<GpuUnwatched>{{"GPU-old", "nvmlDeviceRegisterEvents: Not Supported (3)", true},
                                  {"GPU-noxid", "the GPU reports no Xid events", true}});
  GpuEventWatch& watch = *start->watch;

  auto none = watch.wait(0);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());

  node.event("1 xid 79");
  node.event("0 dbe");
  node.event("-1 xid 48");
  node.event("lost");
  auto xid = watch.wait(0);
  REQUIRE(xid.ok());
  CHECK(**xid == GpuHealthEvent{"GPU-9a2b5c3d-0000-0000-0000-000000000000", 79, "Xid 79"});
  auto ecc = watch.wait(0);
  REQUIRE(ecc.ok());
  CHECK(**ecc ==
        GpuHealthEvent{"GPU-0f6c1f7a-0000-0000-0000-000000000000", 0, "double-bit ECC error"});
  auto unnamed = watch.wait(0);
  REQUIRE(unnamed.ok());
  CHECK(**unnamed == GpuHealthEvent{"", 48, "Xid 48"});
  auto lost = watch.wait(0);
  REQUIRE(lost.ok());
  CHECK(**lost == GpuHealthEvent{"", 0, "GPU lost"});
  start->watch.reset();  // before the library, as the seam asks
}

}  // namespace test_gpu_nvml_library
