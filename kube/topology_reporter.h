// TopologyReporter: the node's NodeResourceTopology kept saying what the agent
// computed (kube/nrt_object.h), through the reporter every node-owned object shares
// (kube/owned_object_reporter.h: create when absent, update only what differs,
// conflicts, back-off; FailureLog key "kube-api noderesourcetopologies").
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kube/nrt_object.h"
#include "kube/owned_object_reporter.h"

namespace koord {

// The NodeResourceTopology content as a ReportedContent.
using NrtReport = ContentReport<NrtContent, newNrtObject, applyNrtContent, nrtDiffers>;

class TopologyReporter : public OwnedObjectReporter {
 public:
  TopologyReporter(ApiClient& client, std::string nodeName, const Clock& clock,
                   FailureLog& failures)
      : OwnedObjectReporter(
            client, ReportedKind{std::string(kNrtResource), std::string(kNrtCollectionPath)},
            std::move(nodeName), clock, failures) {}
  bool sync(const std::optional<nlohmann::json>& current, const NrtContent& content,
            const std::string& nodeUid) {
    return OwnedObjectReporter::sync(current, std::make_shared<const NrtReport>(content), nodeUid);
  }
};

}  // namespace koord
