// The Device object koordlet writes for a node's GPUs: entries, labels, what an
// update keeps of other writers, and when the server's copy already says it.
#include <catch2/catch.hpp>

#include "kube/device_object.h"

namespace test_kube_device_object {  // this file's own names: tests build as unity chunks

using namespace koord;
using nlohmann::json;

namespace {

DeviceContent twoH100s() {
  DeviceContent c;
  c.labels = gpuLabels({"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"}, "535.104.05");
  c.gpus = {gpuFromNvml("GPU-6b1ff724-4fe2-17b8-adfe-1f4c8a4148d1", 0, true, "80Gi", 0, 0,
                        "pci0000:3a", "0000:3b:00.0"),
            gpuFromNvml("GPU-702ee422-96de-2dde-438f-b6eda3ef7efc", 1, true, "80Gi", -1, 1,
                        "pci0000:d7", "0000:d8:00.0")};
  return c;
}

}  // namespace

TEST_CASE("the model label is koordlet's: one leading NVIDIA cut, spaces made dashes", "[device]") {
  CHECK(gpuModelLabel("NVIDIA H100 80GB HBM3") == "H100-80GB-HBM3");
  CHECK(gpuModelLabel("NVIDIA A100-SXM4-80GB") == "A100-SXM4-80GB");
  CHECK(gpuModelLabel("Tesla T4") == "Tesla-T4");
  // GPUs of two models: vendor only, neither model nor driver.
  CHECK(gpuLabels({"NVIDIA A10", "Tesla T4"}, "535.104.05") ==
        std::map<std::string, std::string>{{kGpuVendorLabel, "nvidia"}});
  CHECK(gpuLabels({"NVIDIA A10"}, "535.104.05").at(kGpuDriverVersionLabel) == "535.104.05");
}

TEST_CASE("a created Device names the node, is owned by it and lists each GPU", "[device]") {
  const json obj = newDeviceObject("gpu-node", "node-uid", twoH100s());
  CHECK(obj["apiVersion"] == "scheduling.koordinator.sh/v1alpha1");
  CHECK(obj["kind"] == "Device");
  CHECK(obj["metadata"]["name"] == "gpu-node");
  CHECK(obj["metadata"]["ownerReferences"][0] == json{{"apiVersion", "v1"},
                                                      {"kind", "Node"},
                                                      {"name", "gpu-node"},
                                                      {"uid", "node-uid"},
                                                      {"controller", true},
                                                      {"blockOwnerDeletion", true}});
  CHECK(obj["metadata"]["labels"] == json{{kGpuDriverVersionLabel, "535.104.05"},
                                          {kGpuModelLabel, "H100-80GB-HBM3"},
                                          {kGpuVendorLabel, "nvidia"}});
  REQUIRE(obj["spec"]["devices"].size() == 2);
  CHECK(obj["spec"]["devices"][0] ==
        json::parse(R"({"type": "gpu", "id": "GPU-6b1ff724-4fe2-17b8-adfe-1f4c8a4148d1",
          "minor": 0, "health": true,
          "resources": {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "80Gi",
                        "koordinator.sh/gpu-memory-ratio": "100"},
          "topology": {"socketID": 0, "nodeID": 0, "pcieID": "pci0000:3a",
                       "busID": "0000:3b:00.0"}})"));
  // NUMA node -1 ("none") is written 0, as koordlet does.
  CHECK(obj["spec"]["devices"][1]["topology"]["nodeID"] == 0);
  CHECK(obj["spec"]["devices"][1]["topology"]["socketID"] == 1);
  // Unknown PCI root: no topology at all; no uid: no owner.
  DeviceContent c = twoH100s();
  c.gpus[0] = gpuFromNvml(c.gpus[0].uuid, 0, true, "80Gi", 0, 0, "", "0000:3b:00.0");
  const json bare = newDeviceObject("gpu-node", "", c);
  CHECK_FALSE(bare["spec"]["devices"][0].contains("topology"));
  CHECK_FALSE(bare["metadata"].contains("ownerReferences"));
}

TEST_CASE("the server's copy is the same when its quantities are equal, not its text", "[device]") {
  json stored = newDeviceObject("gpu-node", "node-uid", twoH100s());
  stored["metadata"]["resourceVersion"] = "7";
  stored["spec"]["devices"][0]["resources"]["koordinator.sh/gpu-memory"] = "81920Mi";
  CHECK_FALSE(deviceDiffers(stored, twoH100s()));
  // Another writer's label and device type change nothing.
  stored["metadata"]["labels"]["team"] = "ml";
  stored["spec"]["devices"].push_back(
      {{"type", "rdma"}, {"id", "0000:09:00.0"}, {"minor", 0}, {"health", true}});
  CHECK_FALSE(deviceDiffers(stored, twoH100s()));
}

TEST_CASE("a GPU turning unhealthy, leaving, or a label changing is a difference", "[device]") {
  const json stored = newDeviceObject("gpu-node", "node-uid", twoH100s());
  DeviceContent c = twoH100s();
  c.gpus[1].health = false;
  CHECK(deviceDiffers(stored, c) == "gpu 1 health");
  c = twoH100s();
  c.gpus.pop_back();
  CHECK(deviceDiffers(stored, c) == "gpu devices: 2 on the server, 1 here");
  c = twoH100s();
  c.labels[kGpuDriverVersionLabel] = "550.54.15";
  CHECK(deviceDiffers(stored, c) == "label node.koordinator.sh/gpu-driver-version");
  c = twoH100s();
  c.gpus[0].resources[kGpuMemoryResource] = "40Gi";
  CHECK(deviceDiffers(stored, c) == "gpu 0 resources koordinator.sh/gpu-memory");
  c = twoH100s();
  c.gpus[0].topology->busId = "0000:3c:00.0";
  CHECK(deviceDiffers(stored, c) == "gpu 0 topology");
}

TEST_CASE("an update replaces the gpu entries and managed labels and keeps the rest", "[device]") {
  json stored = newDeviceObject("gpu-node", "node-uid", twoH100s());
  stored["metadata"]["resourceVersion"] = "7";
  stored["metadata"]["labels"]["team"] = "ml";
  stored["metadata"]["managedFields"] = json::array({{{"manager", "koordlet"}}});
  const json rdma = {{"type", "rdma"}, {"id", "0000:09:00.0"}, {"minor", 0}, {"health", true}};
  stored["spec"]["devices"].push_back(rdma);
  DeviceContent c = twoH100s();
  c.gpus[0].health = false;
  c.labels = gpuLabels({"NVIDIA A10", "Tesla T4"}, "535.104.05");  // mixed: model and driver go
  const json out = applyDeviceContent(stored, c);
  CHECK(out["metadata"]["resourceVersion"] == "7");
  CHECK_FALSE(out["metadata"].contains("managedFields"));
  CHECK(out["metadata"]["labels"] == json{{"team", "ml"}, {kGpuVendorLabel, "nvidia"}});
  REQUIRE(out["spec"]["devices"].size() == 3);
  CHECK(out["spec"]["devices"][0]["health"] == false);
  CHECK(out["spec"]["devices"][2] == rdma);
  CHECK_FALSE(deviceDiffers(out, c));
}

TEST_CASE("the partition annotation and policy label are managed like the GPU labels", "[device]") {
  DeviceContent c = twoH100s();
  c.labels[kGpuPartitionPolicyLabel] = "Honor";
  c.annotations[kGpuPartitionsAnnotation] =
      R"({"2":[{"minors":[0,1],"gpuLinkType":"NVLink","allocationScore":1}]})";
  json stored = newDeviceObject("gpu-node", "node-uid", twoH100s());
  stored["metadata"]["annotations"] = {{"team", "ml"}};
  CHECK(deviceDiffers(stored, c) == "label node.koordinator.sh/gpu-partition-policy");
  json out = applyDeviceContent(stored, c);
  CHECK(out["metadata"]["annotations"] ==
        json{{"team", "ml"}, {kGpuPartitionsAnnotation, c.annotations[kGpuPartitionsAnnotation]}});
  CHECK_FALSE(deviceDiffers(out, c));
  // Gone from the content: gone from the object, the other writer's kept.
  out = applyDeviceContent(out, twoH100s());
  CHECK(out["metadata"]["annotations"] == json{{"team", "ml"}});
  CHECK_FALSE(out["metadata"]["labels"].contains(kGpuPartitionPolicyLabel));
  CHECK_FALSE(deviceDiffers(out, twoH100s()));
}

TEST_CASE("a condition keeps the server's time while it says the same, and differs when not",
          "[device]") {
  DeviceContent c = twoH100s();
  c.gpus[0].condition = DeviceCondition{true, "DeviceHealthy", "device is healthy"};
  c.conditionTime = "2026-12-03T10:00:00Z";
  const json stored = newDeviceObject("gpu-node", "node-uid", c);
  // Read again later: the same content, and the update would keep the old time.
  DeviceContent later = c;
  later.conditionTime = "2026-12-03T10:05:00Z";
  CHECK(later == c);
  CHECK_FALSE(deviceDiffers(stored, later));
  CHECK(applyDeviceContent(stored,
                           later)["spec"]["devices"][0]["conditions"][0]["lastTransitionTime"] ==
        "2026-12-03T10:00:00Z");
  // Failed: a difference, and the new time.
  later.gpus[0].health = false;
  later.gpus[0].condition = DeviceCondition{false, "Xid79", "GPU has fallen off the bus"};
  CHECK(deviceDiffers(stored, later) == "gpu 0 health");
  later.gpus[0].health = true;
  CHECK(deviceDiffers(stored, later) == "gpu 0 condition");
  CHECK(applyDeviceContent(stored,
                           later)["spec"]["devices"][0]["conditions"][0]["lastTransitionTime"] ==
        "2026-12-03T10:05:00Z");
  // A condition the server has and the content not.
  CHECK(deviceDiffers(stored, twoH100s()) == "gpu 0 condition");
}

TEST_CASE("an empty Device is what a node with no device gets", "[device]") {
  const json obj = newDeviceObject("cpu-node", "node-uid", DeviceContent{});
  CHECK(obj["spec"] == json{{"devices", json::array()}});
  CHECK_FALSE(obj["metadata"].contains("labels"));
  CHECK_FALSE(obj["metadata"].contains("annotations"));
  CHECK_FALSE(deviceDiffers(obj, DeviceContent{}));
  CHECK(deviceDiffers(obj, twoH100s()) == "label node.koordinator.sh/gpu-vendor");
}

}  // namespace test_kube_device_object
