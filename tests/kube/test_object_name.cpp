// isDnsLabel / isDnsSubdomain: the names that may go into an API path.
#include <catch2/catch.hpp>
#include <string>

#include "kube/object_name.h"

namespace test_kube_object_name {  // this file's own names: tests build as unity chunks

using namespace koord;

TEST_CASE("namespaces are DNS labels: lower-case alphanumerics and inner dashes, at most 63",
          "[object-name]") {
  CHECK(isDnsLabel("colo"));
  CHECK(isDnsLabel("kube-system"));
  CHECK(isDnsLabel("a"));
  CHECK(isDnsLabel("0abc9"));
  CHECK(isDnsLabel(std::string(63, 'a')));
  CHECK_FALSE(isDnsLabel(std::string(64, 'a')));
  CHECK_FALSE(isDnsLabel(""));
  CHECK_FALSE(isDnsLabel("-colo"));
  CHECK_FALSE(isDnsLabel("colo-"));
  CHECK_FALSE(isDnsLabel("Colo"));
  CHECK_FALSE(isDnsLabel("co.lo"));
  CHECK_FALSE(isDnsLabel("co lo"));
  CHECK_FALSE(isDnsLabel("co/lo"));
}

TEST_CASE("pod names are DNS subdomains: labels joined by dots, at most 253", "[object-name]") {
  CHECK(isDnsSubdomain("be-1"));
  CHECK(isDnsSubdomain("web-7d9c.abc"));
  CHECK(isDnsSubdomain(std::string(253, 'a')));
  CHECK_FALSE(isDnsSubdomain(std::string(254, 'a')));
  CHECK_FALSE(isDnsSubdomain(""));
  CHECK_FALSE(isDnsSubdomain("."));
  CHECK_FALSE(isDnsSubdomain("be..1"));
  CHECK_FALSE(isDnsSubdomain(".be"));
  CHECK_FALSE(isDnsSubdomain("be."));
  CHECK_FALSE(isDnsSubdomain("be-.x"));
  CHECK_FALSE(isDnsSubdomain("../nodes"));
  CHECK_FALSE(isDnsSubdomain("be-1/eviction"));
  CHECK_FALSE(isDnsSubdomain("be-1?watch=true"));
  CHECK_FALSE(isDnsSubdomain("BE-1"));
  CHECK_FALSE(isDnsSubdomain("be_1"));
}

}  // namespace test_kube_object_name
