// The QoS classes a pod carries: Kubernetes' own (status.qosClass: the kubepods
// tier its cgroups live under), Koordinator's (the koordinator.sh/qosClass label)
// and the priority class. Header-only, so the cgroup layout names a kubepods tier
// without linking the Pod model (or kube/'s HTTP and JSON libraries).
#pragma once

#include <string_view>

namespace koord {

enum class KubeQos { kGuaranteed, kBurstable, kBestEffort };
// kNone: no (or an unknown) koordinator.sh/qosClass label.
enum class KoordQos { kNone, kLSE, kLSR, kLS, kBE, kSystem };
enum class PriorityClass { kNone, kProd, kMid, kBatch, kFree };

inline const char* toString(KubeQos q) {
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

inline const char* toString(KoordQos q) {
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
inline const char* toString(PriorityClass p) {
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

inline KoordQos koordQosWithDefault(KoordQos label, KubeQos kube) {
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

inline KoordQos koordQosFromLabel(std::string_view value) {
  if (value == "LSE") return KoordQos::kLSE;
  if (value == "LSR") return KoordQos::kLSR;
  if (value == "LS") return KoordQos::kLS;
  if (value == "BE") return KoordQos::kBE;
  if (value == "SYSTEM") return KoordQos::kSystem;
  return KoordQos::kNone;
}

}  // namespace koord
