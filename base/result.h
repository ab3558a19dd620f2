// Result<T>: the error-as-value type used on every path the event loop runs.
// std::expected needs C++23; this is the small subset we need. An Error carries
// one human-readable message that names the file and field at fault.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace koord {

struct Error {
  std::string message;
  // errno when the error came from a system call, 0 otherwise. Callers use it to
  // tell "normal" failures (ENOENT: a pod cgroup vanished) from real ones.
  int sysErrno = 0;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// Result<void> equivalent.
struct Ok {};
using Status = Result<Ok>;

inline Error makeError(std::string message, int sysErrno = 0) {
  return Error{std::move(message), sysErrno};
}

}  // namespace koord
