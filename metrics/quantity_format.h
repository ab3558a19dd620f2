// Kubernetes resource.Quantity text for the values the agent reports (NodeMetric
// usages): the canonical form Go's Quantity.String() gives, so a status written here
// reads byte for byte like koordlet's. Written from the behaviour of
// k8s.io/apimachinery's quantity (facts, not its code):
//
//  * NewMilliQuantity(milli, DecimalSI): strip factors of ten from the value, lower
//    the exponent to a multiple of three, suffix m, "", k, M, G, T, P, E:
//    1250 -> "1250m", 1000 -> "1", 1500000 -> "1500", 2000000 -> "2k", 0 -> "0".
//  * NewQuantity(bytes, BinarySI): a value in (-1024, 1024) prints as DecimalSI
//    (1000 -> "1k", 512 -> "512"); otherwise strip factors of 1024, suffix Ki, Mi,
//    Gi, Ti, Pi, Ei: 3221225472 -> "3Gi", 1536 -> "1536" (1.5 Ki is not whole:
//    1536 = 1024 + 512, no factor of 1024), 3221225473 -> "3221225473".
//
// The float-to-integer step is koordlet's too: int64(cores * 1000) and
// int64(bytes), truncating toward zero; we also clamp to int64's range and map NaN
// to 0, where Go's conversion is undefined.
#pragma once

#include <cstdint>
#include <string>

namespace koord {

std::string formatMilliQuantityDecimalSI(int64_t milli);
std::string formatQuantityBinarySI(int64_t value);

// koordlet's conversions: int64(cores * 1000) and int64(bytes), clamped.
int64_t milliFromCores(double cores);
int64_t truncateToInt64(double value);

}  // namespace koord
