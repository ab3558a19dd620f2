// Whether this build runs under AddressSanitizer. Its allocator keeps freed memory in
// a quarantine (256 MiB by default) and pads every block, so a test that bounds a
// process's RSS asserts that bound in the plain build only and prints it under ASan.
#pragma once

namespace koord::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderAddressSanitizer = true;
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif
#else
inline constexpr bool kUnderAddressSanitizer = false;
#endif

}  // namespace koord::test
