// object_name: whether a string is a valid Kubernetes object name of the two kinds
// that go into an API path: a namespace is an RFC 1123 DNS label, a pod's name a
// DNS subdomain (apimachinery's IsDNS1123Label / IsDNS1123Subdomain). Checked before
// a name is put in a request target, so a name from a strategy or a fixture can never
// change the path ("../nodes", "a/b", "x?watch=true", a space).
#pragma once

#include <string_view>

namespace koord {

// 1 to 63 characters of [a-z0-9-], starting and ending with [a-z0-9].
bool isDnsLabel(std::string_view s);
// 1 to 253 characters: DNS labels joined by '.'.
bool isDnsSubdomain(std::string_view s);

}  // namespace koord
