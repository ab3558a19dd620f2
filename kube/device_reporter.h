// DeviceReporter: the node's Device kept saying what the agent read of its GPUs
// (kube/device_object.h), through the reporter every node-owned object shares
// (kube/owned_object_reporter.h: create when absent, update only what differs,
// conflicts, back-off; FailureLog key "kube-api devices"). The agent syncs it every
// --node-topology-sync-interval, as koordlet does, while the Accelerators gate is on
// (on every node: empty where it has no device).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kube/device_object.h"
#include "kube/owned_object_reporter.h"

namespace koord {

using DeviceReport =
    ContentReport<DeviceContent, newDeviceObject, applyDeviceContent, deviceDiffers>;

class DeviceReporter : public OwnedObjectReporter {
 public:
  DeviceReporter(ApiClient& client, std::string nodeName, const Clock& clock, FailureLog& failures)
      : OwnedObjectReporter(
            client, ReportedKind{std::string(kDeviceResource), std::string(kDeviceCollectionPath)},
            std::move(nodeName), clock, failures) {}
  bool sync(const std::optional<nlohmann::json>& current, const DeviceContent& content,
            const std::string& nodeUid) {
    return OwnedObjectReporter::sync(current, std::make_shared<const DeviceReport>(content),
                                     nodeUid);
  }
};

}  // namespace koord
