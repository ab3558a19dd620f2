// GPUEnvInject's reading of koord-scheduler's device-allocated annotation.
#include <catch2/catch.hpp>

#include "qos/gpu_env_hook.h"

namespace test_qos_gpu_env_hook {  // this file's own names: tests build as unity chunks

using namespace koord;

TEST_CASE("the allocated GPUs' minors become NVIDIA_VISIBLE_DEVICES in the annotation's order",
          "[gpu-env]") {
  // As koord-scheduler writes it: each entry's resources and the Device entry's id.
  const std::string two =
      R"({"gpu":[{"minor":2,"resources":{"koordinator.sh/gpu-core":"100",)"
      R"("koordinator.sh/gpu-memory":"80Gi","koordinator.sh/gpu-memory-ratio":"100"},)"
      R"("id":"GPU-702ee422-96de-2dde-438f-b6eda3ef7efc"},{"minor":0,"resources":{}}]})";
  auto env = gpuEnv({{kDeviceAllocatedAnnotation, two}});
  REQUIRE(env.ok());
  CHECK(*env == std::map<std::string, std::string>{{"NVIDIA_VISIBLE_DEVICES", "2,0"}});
  auto one = gpuEnv({{kDeviceAllocatedAnnotation, R"({"gpu":[{"minor":1}]})"}});
  REQUIRE(one.ok());
  CHECK(one->at("NVIDIA_VISIBLE_DEVICES") == "1");
}

TEST_CASE("no annotation, no gpu entry or only other devices: no variable", "[gpu-env]") {
  CHECK(gpuEnv({})->empty());
  CHECK(gpuEnv({{kDeviceAllocatedAnnotation, "{}"}})->empty());
  CHECK(gpuEnv({{kDeviceAllocatedAnnotation, R"({"gpu":[]})"}})->empty());
  CHECK(gpuEnv({{kDeviceAllocatedAnnotation, R"({"rdma":[{"minor":0,"id":"0000:09:00.0"}]})"}})
            ->empty());
}

TEST_CASE("a bad annotation is refused naming the field", "[gpu-env]") {
  const std::string where = "annotation scheduling.koordinator.sh/device-allocated: ";
  auto err = [](std::string_view text) { return gpuMinorsAllocated(text).error().message; };
  CHECK(err("{gpu") == where + "not valid JSON");
  CHECK(err("[1]") == where + "not a JSON object");
  CHECK(err(R"({"gpu":{"minor":0}})") == where + "gpu: not an array");
  CHECK(err(R"({"gpu":[{"resources":{}}]})") == where + "gpu[0].minor: not an integer");
  CHECK(err(R"({"gpu":[{"minor":0},{"minor":1.5}]})") == where + "gpu[1].minor: not an integer");
  CHECK(err(R"({"gpu":[{"minor":-1}]})") == where + "gpu[0].minor: -1 is not a device minor");
}

}  // namespace test_qos_gpu_env_hook
