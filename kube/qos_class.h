// The QoS classes a pod carries: Kubernetes' own (status.qosClass: the kubepods
// tier its cgroups live under), Koordinator's (the koordinator.sh/qosClass label)
// and the priority class. Header of plain enums, so the cgroup layout can name a
// tier without the Pod model.
#pragma once

#include <string_view>

namespace koord {

enum class KubeQos { kGuaranteed, kBurstable, kBestEffort };
// kNone: no (or an unknown) koordinator.sh/qosClass label.
enum class KoordQos { kNone, kLSE, kLSR, kLS, kBE, kSystem };
enum class PriorityClass { kNone, kProd, kMid, kBatch, kFree };

// The koordinator.sh/qosClass label's value; kNone for anything else.
KoordQos koordQosFromLabel(std::string_view value);
// The label, else the kube QoS default: Guaranteed->LSR, Burstable->LS, BestEffort->BE.
KoordQos koordQosWithDefault(KoordQos label, KubeQos kube);

const char* toString(KubeQos q);
const char* toString(KoordQos q);  // "LSE", ..., "" for kNone
const char* toString(PriorityClass p);

}  // namespace koord
