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
class NrtReport final : public ReportedContent {
 public:
  explicit NrtReport(NrtContent content) : content_(std::move(content)) {}
  nlohmann::json newObject(std::string_view nodeName, std::string_view nodeUid) const override {
    return newNrtObject(nodeName, nodeUid, content_);
  }
  nlohmann::json applied(const nlohmann::json& current) const override {
    return applyNrtContent(current, content_);
  }
  std::optional<std::string> differs(const nlohmann::json& current) const override {
    return nrtDiffers(current, content_);
  }
  bool equals(const ReportedContent& other) const override {
    const auto* o = dynamic_cast<const NrtReport*>(&other);
    return o != nullptr && o->content_ == content_;
  }

 private:
  NrtContent content_;
};

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
