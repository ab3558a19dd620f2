// koord-device-daemon's device-info files (gpu/device_infos.h, gpu/device_info_dir.h)
// and the Device koordlet builds from them: values worked by hand from koordlet
// v1.8.0's rules (statesinformer's buildXPUDevice, its labels and partition table).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "base/read_file.h"
#include "gpu/device_info_dir.h"
#include "gpu/device_infos.h"
#include "tests/support/temp_tree.h"

namespace test_gpu_device_infos {  // this file's own names: tests build as unity chunks

using namespace koord;
using nlohmann::json;

namespace {

// Two NVLink-paired A100s from a writer other than the daemon (which writes no
// p2pLinks at v1.8.0), one of them failed.
constexpr const char* kA100s = R"([
  {"vendor": "nvidia", "model": "A100-SXM4-80GB", "uuid": "GPU-1111", "minor": "0",
   "resources": {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "81920Mi"},
   "topology": {"p2pLinks": [{"peerMinor": "1", "type": "NVLink"}], "mustHonorPartition": true,
                "socketID": "0", "nodeID": "0", "pcieID": "pci0000:00", "busID": "0000:07:00.0"},
   "status": {"healthy": true}},
  {"vendor": "nvidia", "model": "A100-SXM4-80GB", "uuid": "GPU-2222", "minor": "1",
   "resources": {"gpu-core": "100", "gpu-memory": "80Gi"},
   "topology": {"p2pLinks": [{"peerMinor": "0", "type": "NVLink"}], "mustHonorPartition": true,
                "socketID": "1", "nodeID": "1", "pcieID": "pci0000:80", "busID": "0000:87:00.0"},
   "status": {"healthy": false, "errCode": "Xid79", "errMessage": "GPU has fallen off the bus"}}
])";

std::vector<XpuDevice> parsed(std::string_view text) {
  auto d = parseDeviceInfoFile(text, "test");
  INFO((d ? std::string() : d.error().message));
  REQUIRE(d);
  return *d;
}

std::string errorOf(std::string_view text) {
  auto d = parseDeviceInfoFile(text, "ic-device");
  REQUIRE_FALSE(d);
  return d.error().message;
}

}  // namespace

TEST_CASE("the daemon's Ascend file gives koordlet's Device: its resources, no gpu-core",
          "[gpu][device-infos]") {
  const auto devices = parsed(*readFile(test::fixturePath("device-infos/ascend-910b3-ic-device")));
  REQUIRE(devices.size() == 2);
  const XpuContent x = deviceContentFromInfos(devices, "2026-12-03T10:00:00Z");
  CHECK(x.skipped.empty());
  const json obj = newDeviceObject("npu-node", "uid-1", x.content);
  CHECK(obj["metadata"]["labels"] ==
        json{{kGpuModelLabel, "Ascend-910B3"}, {kGpuVendorLabel, "huawei"}});
  CHECK_FALSE(obj["metadata"].contains("annotations"));
  REQUIRE(obj["spec"]["devices"].size() == 2);
  CHECK(obj["spec"]["devices"][0] == json::parse(R"({"type": "gpu", "id": "npu-0-0", "minor": 0,
    "health": true,
    "resources": {"huawei.com/npu-core": "20", "huawei.com/npu-cpu": "7",
                  "huawei.com/npu-dvpp": "100", "koordinator.sh/gpu-memory": "65536Mi",
                  "koordinator.sh/gpu-memory-ratio": "100"},
    "topology": {"socketID": -1, "nodeID": 0, "pcieID": "pci0000:00", "busID": "0000:c1:00.0"},
    "conditions": [{"type": "Healthy", "status": "True", "reason": "DeviceHealthy",
                    "message": "device is healthy",
                    "lastTransitionTime": "2026-12-03T10:00:00Z"}]})"));
  CHECK(obj["spec"]["devices"][1]["health"] == false);
  CHECK(obj["spec"]["devices"][1]["conditions"][0] ==
        json{{"type", "Healthy"},
             {"status", "False"},
             {"reason", "ChipError"},  // the API server's pattern: no space
             {"message", "NPU index 1 has 2 chip faults"},
             {"lastTransitionTime", "2026-12-03T10:00:00Z"}});
}

TEST_CASE("an errCode the API server would refuse as a reason is made one it takes",
          "[gpu][device-infos]") {
  auto reason = [](const std::string& code) {
    const XpuContent x = deviceContentFromInfos(
        parsed(json::array({{{"uuid", "a"},
                             {"minor", "0"},
                             {"status", {{"healthy", false}, {"errCode", code}}}}})
                   .dump()),
        "t");
    return x.content.gpus.at(0).condition->reason;
  };
  CHECK(reason("Xid79") == "Xid79");
  CHECK(reason("chip error") == "ChipError");
  CHECK(reason("hbm-ecc error:2") == "HbmEccError2");
  CHECK(reason("") == "Unknown");
  CHECK(reason("42") == "Unknown");  // no letter to start with
  CHECK(reason("  ") == "Unknown");
}

TEST_CASE("a message longer than a condition takes is cut, never inside a character",
          "[gpu][device-infos]") {
  // 16383 two-byte characters and a three-byte one: the cut falls inside the latter.
  std::string long_message;
  for (int i = 0; i < 16383; ++i) long_message += "\xc3\xa9";  // é
  long_message += "\xe2\x82\xac and more";                     // €
  const XpuContent x = deviceContentFromInfos(
      parsed(json::array({{{"uuid", "a"},
                           {"minor", "0"},
                           {"status", {{"healthy", false}, {"errMessage", long_message}}}}})
                 .dump()),
      "t");
  const std::string& m = x.content.gpus.at(0).condition->message;
  CHECK(m.size() == 32766);
  CHECK(m == long_message.substr(0, 32766));
  CHECK_NOTHROW(newDeviceObject("n", "u", x.content).dump());
}

TEST_CASE("NVLink pairs give the partition label and table as koordlet writes them",
          "[gpu][device-infos]") {
  const XpuContent x = deviceContentFromInfos(parsed(kA100s), "t");
  const DeviceContent& c = x.content;
  CHECK(c.labels == std::map<std::string, std::string>{{kGpuModelLabel, "A100-SXM4-80GB"},
                                                       {kGpuVendorLabel, "nvidia"},
                                                       {kGpuPartitionPolicyLabel, "Honor"}});
  // The second GPU's link names the same pair: one partition.
  CHECK(c.annotations.at(kGpuPartitionsAnnotation) ==
        R"({"2":[{"minors":[0,1],"gpuLinkType":"NVLink","allocationScore":1}]})");
  REQUIRE(c.gpus.size() == 2);
  // Bare names get koordinator.sh/; socketID is -1 whatever the file says.
  CHECK(c.gpus[1].resources ==
        std::map<std::string, std::string>{{kGpuCoreResource, "100"},
                                           {kGpuMemoryResource, "80Gi"},
                                           {kGpuMemoryRatioResource, "100"}});
  CHECK(c.gpus[1].topology == DeviceTopology{-1, 1, "pci0000:80", "0000:87:00.0"});
  CHECK(c.gpus[1].condition == DeviceCondition{false, "Xid79", "GPU has fallen off the bus"});
}

TEST_CASE("eight HCCS NPUs in two rings give two partitions of four, sizes as text keys",
          "[gpu][device-infos]") {
  json devices = json::array();
  for (int m = 0; m < 8; ++m) {
    std::string peers;
    const int base = m < 4 ? 0 : 4;
    for (int p = base; p < base + 4; ++p) {
      if (p != m) peers += (peers.empty() ? "" : ",") + std::to_string(p);
    }
    json links = json::array({{{"peerMinor", peers}, {"type", "HCCS"}}});
    // A pair link of minors 0 and 1 besides, and links koordlet skips.
    if (m == 0) links.push_back({{"peerMinor", "1"}, {"type", "HCCS"}});
    if (m == 2) links.push_back({{"peerMinor", ""}, {"type", "HCCS"}});
    if (m == 3) links.push_back({{"peerMinor", "0,1,2,g"}, {"type", "PCIe"}});  // = the ring
    devices.push_back({{"vendor", "huawei"},
                       {"model", "Ascend-910B"},
                       {"uuid", "npu-" + std::to_string(m)},
                       {"minor", std::to_string(m)},
                       {"topology", {{"p2pLinks", links}, {"nodeID", ""}}}});
  }
  const XpuContent x = deviceContentFromInfos(parsed(devices.dump()), "t");
  CHECK(x.content.labels.at(kGpuPartitionPolicyLabel) == "Prefer");
  CHECK(x.content.annotations.at(kGpuPartitionsAnnotation) ==
        R"({"2":[{"minors":[0,1],"gpuLinkType":"HCCS","allocationScore":1}],)"
        R"("4":[{"minors":[0,1,2,3],"gpuLinkType":"HCCS","allocationScore":1},)"
        R"({"minors":[4,5,6,7],"gpuLinkType":"HCCS","allocationScore":1}]})");
  // An empty nodeID is -1; no status: healthy, no condition.
  CHECK(x.content.gpus[0].topology->numaNode == -1);
  CHECK(x.content.gpus[0].health);
  CHECK_FALSE(x.content.gpus[0].condition);
}

TEST_CASE("a file that is not koordlet's shape is rejected with the file and field named",
          "[gpu][device-infos]") {
  CHECK(errorOf("") == "ic-device: not JSON (empty file)");
  CHECK(errorOf(R"({"vendor": "nvidia", "uuid": "GPU-1", "minor": "0"})") ==
        "ic-device: want an array of devices, got an object");
  CHECK(errorOf(R"([{"uuid": "GPU-1", "minor": 0}])") ==
        "ic-device: [0].minor: want a string, got a number");
  CHECK(errorOf(R"([{"uuid": "GPU-1", "minor": "zero"}])") ==
        "ic-device: [0].minor: \"zero\" is not a device number");
  CHECK(errorOf(R"([{"uuid": "GPU-1", "minor": "0", "resources": {"gpu-memory": "lots"}}])")
            .starts_with("ic-device: [0].resources.gpu-memory: \"lots\" is not a quantity"));
  CHECK(errorOf(R"([{"uuid": "GPU-1", "minor": "0", "topology": {"nodeID": 1}}])") ==
        "ic-device: [0].topology.nodeID: want a string, got a number");
  CHECK(errorOf(R"([{"uuid": "GPU-1", "minor": "0", "status": {"healthy": "yes"}}])") ==
        "ic-device: [0].status.healthy: want a boolean, got a string");
  CHECK(errorOf(R"([{"uuid": "GPU-1", "minor": "0", "topology": {"p2pLinks": {}}}])") ==
        "ic-device: [0].topology.p2pLinks: want an array, got an object");
}

TEST_CASE("names in any case and unknown fields are read as Go's decoder reads them",
          "[gpu][device-infos]") {
  const auto d = parsed(R"([{"UUID": "GPU-1", "Minor": "3", "vendor": "metax",
                             "resourece": {"x": "1"}, "extra": [1, 2]}])");
  REQUIRE(d.size() == 1);
  CHECK(d[0].uuid == "GPU-1");
  CHECK(d[0].minor == 3);
  CHECK(d[0].resources.empty());  // the design doc's misspelt key is not "resources"
  CHECK(parsed("null").empty());
  CHECK(parsed("[]").empty());
}

TEST_CASE("a device without uuid, or whose minor or uuid is taken, is skipped and said",
          "[gpu][device-infos]") {
  const XpuContent x = deviceContentFromInfos(parsed(R"([
    {"uuid": "a", "minor": "0", "model": "M", "vendor": "v"},
    {"uuid": "b", "minor": "0"}, {"uuid": "a", "minor": "1"}, {"minor": "2"},
    {"uuid": "c", "minor": "3"}])"),
                                              "t");
  REQUIRE(x.content.gpus.size() == 2);
  CHECK(x.content.gpus[1].uuid == "c");
  CHECK(x.skipped == std::vector<std::string>{"device b minor 0: another device has this minor",
                                              "device a minor 1: another device has this uuid",
                                              "device (no uuid) minor 2: no uuid"});
}

TEST_CASE("a model that is no label value is left out of the labels, not sent to fail",
          "[gpu][device-infos]") {
  const XpuContent x =
      deviceContentFromInfos(parsed(R"([{"uuid": "a", "minor": "0", "model": "Tesla T4",
                                         "vendor": "nvidia"}])"),
                             "t");
  CHECK(x.content.labels == std::map<std::string, std::string>{{kGpuVendorLabel, "nvidia"}});
  REQUIRE(x.skipped.size() == 1);
  CHECK(x.skipped[0].starts_with("label node.koordinator.sh/gpu-model: \"Tesla T4\""));
}

TEST_CASE("the dir is read in name order, temporary and bad files skipped, last good kept",
          "[gpu][device-infos]") {
  test::TempTree tree({{"infos/b-second", R"([{"uuid": "B", "minor": "1"}])"},
                       {"infos/a-first", R"([{"uuid": "A", "minor": "0"}])"},
                       // renameio's temporary file, mid-write: never read
                       {"infos/.ic-device123456", "[{\"uu"},
                       {"infos/sub/c", R"([{"uuid": "C", "minor": "2"}])"}});
  DeviceInfoDir dir(tree.path() + "/infos");
  auto r = dir.read();
  CHECK(r.errors.empty());
  CHECK(r.files == 2);
  REQUIRE(r.devices.size() == 2);
  CHECK(r.devices[0].uuid == "A");
  CHECK(r.devices[1].uuid == "B");
  // b-second broken: named, and its last good device stays.
  tree.write("infos/b-second", R"([{"uuid": "B", "minor": 1}])");
  r = dir.read();
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0] == tree.path() + "/infos/b-second: [0].minor: want a string, got a number");
  REQUIRE(r.devices.size() == 2);
  CHECK(r.devices[1].uuid == "B");
  // A new bad file has nothing to keep; a removed file takes its devices.
  tree.write("infos/c-new", "{}");
  ::unlink((tree.path() + "/infos/a-first").c_str());
  r = dir.read();
  CHECK(r.errors.size() == 2);
  REQUIRE(r.devices.size() == 1);
  CHECK(r.devices[0].uuid == "B");
  // Mended: read afresh.
  tree.write("infos/b-second", R"([{"uuid": "B2", "minor": "1"}])");
  r = dir.read();
  REQUIRE(r.devices.size() == 1);
  CHECK(r.devices[0].uuid == "B2");
}

TEST_CASE("an absent dir is no error and no device", "[gpu][device-infos]") {
  test::TempTree tree;
  DeviceInfoDir dir(tree.path() + "/none");
  const auto r = dir.read();
  CHECK(r.dirMissing);
  CHECK(r.errors.empty());
  CHECK(r.devices.empty());
}

}  // namespace test_gpu_device_infos
