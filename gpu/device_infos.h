// koord-device-daemon's device-info files (facts: Koordinator v1.8.0,
// pkg/koordlet/util/device.go's XPUDeviceInfo, the XPU collector and the
// statesinformer's device report) and the Device content koordlet builds from them.
//
// A file is one JSON array of devices, as koord-device-daemon writes
// /var/run/koordlet/xpu-device-infos/ic-device (or any other writer a file of its
// own):
//   [{"vendor": "huawei", "model": "Ascend-910B3", "uuid": "npu-0-0", "minor": "0",
//     "resources": {"huawei.com/npu-core": "20", "koordinator.sh/gpu-memory": "65536Mi"},
//     "topology": {"p2pLinks": [{"peerMinor": "1,2,3", "type": "HCCS"}],
//                  "mustHonorPartition": true, "socketID": "-1", "nodeID": "0",
//                  "pcieID": "pci0000:00", "busID": "0000:c1:00.0"},
//     "status": {"healthy": false, "errCode": "chip error", "errMessage": "..."}}]
// Numbers are strings ("minor": "0"); field names match in any case (Go's decoder);
// unknown fields are ignored; `null` is an empty list. Anything else that is not
// this shape rejects the whole file with the file and field named. Stricter than
// koordlet's decoder: where it goes on with a bad minor, nodeID or quantity (read
// as 0, or dropped), with a null device or resource, or with bytes after the
// array, the file is rejected here (a value that cannot be right is not published).
//
// The content (deviceContentFromInfos): each device a "gpu" entry in minor order;
// resources as the file names them, the bare "gpu-core" and "gpu-memory" given the
// koordinator.sh/ prefix, gpu-memory-ratio 100 unless the file says; no gpu-core
// when the file has none (NPUs); topology only when the file has one, socketID
// always -1 and nodeID -1 when empty (koordlet); health from status (healthy when
// absent) with koordlet's Healthy condition when the file has a status (its reason
// the errCode, made a reason the API server takes: "chip error" -> "ChipError";
// koordlet writes it as it is and the server refuses the Device). Labels
// from the first device: gpu-model, gpu-vendor, and gpu-partition-policy (Honor
// when it must honor partitions, else Prefer) when it has p2pLinks. The
// gpu-partitions annotation: every link's peers with the device itself, sorted,
// each set once (the first link type wins), keyed by its size:
//   {"4":[{"minors":[0,1,2,3],"gpuLinkType":"HCCS","allocationScore":1}]}
// A minor or uuid a device before it has taken is skipped and said.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "kube/device_object.h"

namespace koord {

struct XpuP2pLink {
  std::vector<int> peers;  // peerMinor's numbers (ones that are no number are left out)
  std::string type;        // "NVLink", "HCCS", ...
  bool usable = false;     // peerMinor and type both set (koordlet skips a link lacking one)
};

struct XpuTopology {
  std::optional<std::vector<XpuP2pLink>> p2pLinks;  // present (even []) sets the policy label
  bool mustHonorPartition = false;
  int numaNode = -1;
  std::string pcieId;
  std::string busId;
};

struct XpuStatus {
  bool healthy = true;
  std::string errCode;
  std::string errMessage;
};

struct XpuDevice {
  std::string vendor;
  std::string model;
  std::string uuid;
  int minor = 0;
  std::vector<std::pair<std::string, std::string>> resources;  // as the file names them
  std::optional<XpuTopology> topology;
  std::optional<XpuStatus> status;
};

// One file's devices; an error names `source` and the field.
Result<std::vector<XpuDevice>> parseDeviceInfoFile(std::string_view text,
                                                   const std::string& source);

struct XpuContent {
  DeviceContent content;
  std::vector<std::string> skipped;  // devices left out, and why
};

// The Device content of these devices (see above); `now` is the RFC 3339 time a
// changed condition gets.
XpuContent deviceContentFromInfos(const std::vector<XpuDevice>& devices, std::string now);

}  // namespace koord
