// Building blocks of the WriteReasons strategies attach to their writes (GET
// /explain, cgroupfs/write_reason.h): a NodeSLO field with its value and source,
// and numbers as text.
#pragma once

#include <string>
#include <string_view>

#include "cgroupfs/write_reason.h"
#include "qos/slo_config.h"

namespace koord {

// spec.<path> (dotted: "resourceUsedThresholdWithBE.cpuSuppressThresholdPercent"),
// named by its path, its value as the effective spec holds it (a string without
// quotes; "null" when unset), from spec.origin when the source set it, else
// "default" (koordlet's).
WriteInput sloInput(const NodeSloSpec& spec, std::string_view path);

// Where spec.<path> came from: spec.origin, or "default".
std::string sloFieldSource(const NodeSloSpec& spec, std::string_view path);

// A measurement as text, to `digits` decimals ("3.21").
std::string fixed(double value, int digits = 2);

}  // namespace koord
