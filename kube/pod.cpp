// Pod model helpers and the Kubernetes resource.Quantity parser. The JSON side
// (PodList -> Pod) lives in pod_parser.cpp.
#include "kube/pod.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "base/quote.h"

namespace koord {

KoordQos Pod::qosWithDefault() const { return koordQosWithDefault(koordQos, kubeQos); }

PriorityClass Pod::priorityWithDefault() const {
  if (priorityClass != PriorityClass::kNone) return priorityClass;
  switch (qosWithDefault()) {
    case KoordQos::kSystem:
    case KoordQos::kLSE:
    case KoordQos::kLSR:
    case KoordQos::kLS:
      return PriorityClass::kProd;
    case KoordQos::kBE:
      return PriorityClass::kBatch;
    case KoordQos::kNone:
      return PriorityClass::kNone;
  }
  return PriorityClass::kNone;
}

std::vector<ContainerAmount> containerAmounts(const Pod& pod,
                                              std::optional<int64_t> ResourceList::*field,
                                              bool limits) {
  std::vector<ContainerAmount> out;
  out.reserve(pod.initContainers.size() + pod.containers.size());
  for (const auto* list : {&pod.initContainers, &pod.containers}) {
    for (const Container& c : *list) {
      out.push_back(ContainerAmount{c.name, c.kind(), (limits ? c.limits : c.requests).*field});
    }
  }
  return out;
}

namespace {

// The kubelet's PodRequests for one resource (kube/pod_resources.h): app containers
// and sidecars summed, raised to each init container beside the sidecars before it,
// plus the overhead. The values come from the kubelet: a negative one counts 0 and a
// sum past int64 saturates, so a crafted spec cannot cause undefined behaviour.
// `running`: what the pod holds once started: app containers and sidecars only (the
// regular init containers have finished), no overhead.
int64_t podRequest(const Pod& pod, std::optional<int64_t> ResourceList::*field, bool running) {
  std::vector<ContainerAmount> amounts = containerAmounts(pod, field, false);
  if (running) {
    std::erase_if(amounts, [](const ContainerAmount& a) { return a.kind == ContainerKind::kInit; });
  }
  for (ContainerAmount& a : amounts) {
    if (a.value && *a.value < 0) a.value = 0;
  }
  auto r = podRequests(amounts, running ? std::nullopt : pod.overhead.*field);
  return r ? *r : std::numeric_limits<int64_t>::max();
}

}  // namespace

int64_t Pod::requestCpuMilli() const { return podRequest(*this, &ResourceList::cpuMilli, false); }
int64_t Pod::requestMemoryBytes() const {
  return podRequest(*this, &ResourceList::memoryBytes, false);
}

int64_t Pod::batchCpuRequestMilli() const { return runningRequest(&ResourceList::batchCpuMilli); }

int64_t Pod::runningRequest(std::optional<int64_t> ResourceList::*field) const {
  return podRequest(*this, field, true);
}

namespace {

struct Suffix {
  std::string_view text;
  int decimalExp;  // value × 10^decimalExp
  int binaryExp;   // value × 2^binaryExp
};

// resource.Quantity suffixes. "n" and "u" are not in the documented grammar but
// ParseQuantity accepts them, and so do we.
constexpr Suffix kSuffixes[] = {
    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"", 0, 0},    {"k", 3, 0},   {"M", 6, 0},
    {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
};

bool isDigit(char c) { return c >= '0' && c <= '9'; }

Error invalidQuantity(std::string_view text) {
  return makeError("invalid quantity " + quoteText(text, 64));
}

// The exponent of "e<int>" / "E<int>": optional sign and digits, within int32
// as ParseQuantity's strconv.ParseInt(s, 10, 32) requires.
bool parseExponent(std::string_view s, int64_t* out) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  int64_t v = 0;
  for (char c : s) {
    if (!isDigit(c)) return false;
    v = v * 10 + (c - '0');
    if (v > int64_t{1} << 31) return false;
  }
  v = negative ? -v : v;
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    return false;
  }
  *out = v;
  return true;
}

// Multiplies a decimal digit string (most significant first) by 2^shift,
// shift <= 60. The carry stays below 2^shift, so digit × 2^shift + carry stays
// below 10 × 2^60 < 2^64.
std::string timesPowerOfTwo(const std::string& digits, int shift) {
  std::string out(digits.size(), '0');
  uint64_t carry = 0;
  for (size_t i = digits.size(); i-- > 0;) {
    const uint64_t t = (static_cast<uint64_t>(digits[i] - '0') << shift) + carry;
    out[i] = static_cast<char>('0' + t % 10);
    carry = t / 10;
  }
  std::string head;
  while (carry > 0) {
    head.insert(head.begin(), static_cast<char>('0' + carry % 10));
    carry /= 10;
  }
  return head + out;
}

// Parses a quantity and returns ceil(|value| × 10^extraExp) with its sign, i.e.
// Quantity.Value() (extraExp 0) or Quantity.MilliValue() (extraExp 3): the
// magnitude is rounded up, so "0.1m" CPU is 1 milli and "-0.5" is -1.
// Exact for any input length: the digits are kept as text, never as a double.
Result<int64_t> parseScaled(std::string_view text, int extraExp) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  size_t pos = 0;
  while (pos < s.size() && isDigit(s[pos])) ++pos;
  const std::string_view whole = s.substr(0, pos);
  std::string_view fraction;
  if (pos < s.size() && s[pos] == '.') {
    const size_t start = ++pos;
    while (pos < s.size() && isDigit(s[pos])) ++pos;
    fraction = s.substr(start, pos - start);
  }
  // ParseQuantity takes "." and "-" as zero; we want at least one digit.
  if (whole.empty() && fraction.empty()) return invalidQuantity(text);
  const std::string_view suffixText = s.substr(pos);

  int64_t decimalExp = 0;
  int binaryExp = 0;
  bool found = false;
  for (const Suffix& suffix : kSuffixes) {
    if (suffix.text == suffixText) {
      decimalExp = suffix.decimalExp;
      binaryExp = suffix.binaryExp;
      found = true;
      break;
    }
  }
  if (!found) {
    if (suffixText.size() < 2 || (suffixText[0] != 'e' && suffixText[0] != 'E') ||
        !parseExponent(suffixText.substr(1), &decimalExp)) {
      return invalidQuantity(text);
    }
  }

  // value = digits × 10^exp × 2^binaryExp, digits without leading or trailing zeros.
  std::string digits;
  digits.reserve(whole.size() + fraction.size());
  digits.append(whole).append(fraction);
  int64_t exp = decimalExp + extraExp - static_cast<int64_t>(fraction.size());
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return int64_t{0};
  digits.erase(0, first);
  const size_t last = digits.find_last_not_of('0');
  exp += static_cast<int64_t>(digits.size() - last - 1);
  digits.erase(last + 1);
  if (binaryExp > 0) digits = timesPowerOfTwo(digits, binaryExp);

  // INT64_MAX has 19 digits; a number with 20 or more (no leading zero) is larger.
  constexpr size_t kMaxDigits = 19;
  auto overflow = [&]() {
    return makeError("quantity " + quoteText(text, 64) + " overflows int64" +
                     (extraExp != 0 ? " in milli-units" : ""));
  };
  uint64_t magnitude = 0;
  if (exp >= 0) {
    if (digits.size() + static_cast<uint64_t>(exp) > kMaxDigits) return overflow();
    for (char c : digits) magnitude = magnitude * 10 + static_cast<uint64_t>(c - '0');
    for (int64_t i = 0; i < exp; ++i) magnitude *= 10;
  } else {
    const uint64_t cut = static_cast<uint64_t>(-exp);  // digits after the decimal point
    if (cut >= digits.size()) {
      magnitude = 1;  // 0 < value < 1, rounded up
    } else {
      const size_t intDigits = digits.size() - static_cast<size_t>(cut);
      if (intDigits > kMaxDigits) return overflow();
      for (size_t i = 0; i < intDigits; ++i) {
        magnitude = magnitude * 10 + static_cast<uint64_t>(digits[i] - '0');
      }
      if (digits.find_first_not_of('0', intDigits) != std::string::npos) ++magnitude;
    }
  }
  if (magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return overflow();
  const auto value = static_cast<int64_t>(magnitude);
  return negative ? -value : value;
}

}  // namespace

Result<int64_t> parseQuantityMilli(std::string_view text) { return parseScaled(text, 3); }

Result<int64_t> parseQuantity(std::string_view text) { return parseScaled(text, 0); }

}  // namespace koord
