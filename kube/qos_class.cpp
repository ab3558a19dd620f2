#include "kube/qos_class.h"

namespace koord {

const char* toString(KubeQos q) {
  switch (q) {
    case KubeQos::kGuaranteed:
      return "Guaranteed";
    case KubeQos::kBurstable:
      return "Burstable";
    case KubeQos::kBestEffort:
      return "BestEffort";
  }
  return "?";
}

const char* toString(KoordQos q) {
  switch (q) {
    case KoordQos::kNone:
      return "";
    case KoordQos::kLSE:
      return "LSE";
    case KoordQos::kLSR:
      return "LSR";
    case KoordQos::kLS:
      return "LS";
    case KoordQos::kBE:
      return "BE";
    case KoordQos::kSystem:
      return "SYSTEM";
  }
  return "?";
}

// The label values of koordinator.sh/priority-class; "" for kNone, as
// koordinator's PriorityNone.
const char* toString(PriorityClass p) {
  switch (p) {
    case PriorityClass::kNone:
      return "";
    case PriorityClass::kProd:
      return "koord-prod";
    case PriorityClass::kMid:
      return "koord-mid";
    case PriorityClass::kBatch:
      return "koord-batch";
    case PriorityClass::kFree:
      return "koord-free";
  }
  return "?";
}

KoordQos koordQosWithDefault(KoordQos label, KubeQos kube) {
  if (label != KoordQos::kNone) return label;
  // koordinator's QoSClassForGuaranteed is LSR (apis/extension/qos_utils.go).
  switch (kube) {
    case KubeQos::kGuaranteed:
      return KoordQos::kLSR;
    case KubeQos::kBurstable:
      return KoordQos::kLS;
    case KubeQos::kBestEffort:
      return KoordQos::kBE;
  }
  return KoordQos::kNone;
}

KoordQos koordQosFromLabel(std::string_view value) {
  if (value == "LSE") return KoordQos::kLSE;
  if (value == "LSR") return KoordQos::kLSR;
  if (value == "LS") return KoordQos::kLS;
  if (value == "BE") return KoordQos::kBE;
  if (value == "SYSTEM") return KoordQos::kSystem;
  return KoordQos::kNone;
}

}  // namespace koord
