// Checked int64 arithmetic for values a pod or the runtime hands us (annotations,
// resources, NRI requests). Products and sums of such values can overflow on a
// hostile or broken input; a wrapped result would be written to a cgroup as if it
// were meant (a negative memory limit, a tiny quota). These return nullopt
// instead, and the caller refuses the field, naming it.
#pragma once

#include <cstdint>
#include <optional>

namespace koord {

inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace koord
