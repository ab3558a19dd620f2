#include "prediction/checkpoint.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/quote.h"
#include "base/read_file.h"
#include "base/time_format.h"
#include "kube/json_type.h"

namespace koord::prediction {

namespace {

using nlohmann::json;

constexpr const char* kGoZeroTime = "0001-01-01T00:00:00Z";
constexpr std::string_view kTmpSuffix = ".tmp";

json encodeHistogram(const HistogramCheckpoint& h) {
  json out = json::object();
  // time.Time is a struct: omitempty keeps it, the zero time included.
  out["referenceTimestamp"] = h.reference ? rfc3339Nano(*h.reference) : kGoZeroTime;
  if (!h.bucketWeights.empty()) {
    json weights = json::object();  // keys sorted as text, as Go sorts map keys
    for (const auto& [bucket, w] : h.bucketWeights) weights[std::to_string(bucket)] = w;
    out["bucketWeights"] = std::move(weights);
  }
  if (h.totalWeight != 0) out["totalWeight"] = h.totalWeight;
  return out;
}

Result<HistogramCheckpoint> decodeHistogram(const json& j, const std::string& field) {
  auto fail = [&](const std::string& sub, const std::string& what) {
    return makeError(field + (sub.empty() ? "" : "." + sub) + ": " + what);
  };
  if (!j.is_object()) return fail("", std::string("expected an object, got ") + jsonTypeName(j));
  HistogramCheckpoint h;
  if (const auto it = j.find("referenceTimestamp"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return fail("referenceTimestamp", "expected a string");
    const auto& text = it->get_ref<const std::string&>();
    if (text != kGoZeroTime) {
      auto t = parseRfc3339(text);
      if (!t) return fail("referenceTimestamp", t.error().message);
      h.reference = *t;
    }
  }
  if (const auto it = j.find("bucketWeights"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return fail("bucketWeights", "expected an object");
    for (const auto& [key, value] : it->items()) {
      char* end = nullptr;
      errno = 0;
      const long bucket = std::strtol(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || errno != 0 || bucket < 0 || bucket > 100000) {
        return fail("bucketWeights", "key " + quoteText(key, 32) + " is not a bucket index");
      }
      if (!value.is_number_unsigned() || value.get<uint64_t>() > UINT32_MAX) {
        return fail("bucketWeights." + key, "expected a uint32, got " + value.dump());
      }
      h.bucketWeights[static_cast<int>(bucket)] = value.get<uint32_t>();
    }
  }
  if (const auto it = j.find("totalWeight"); it != j.end() && !it->is_null()) {
    if (!it->is_number()) return fail("totalWeight", "expected a number");
    h.totalWeight = it->get<double>();
    if (!std::isfinite(h.totalWeight) || h.totalWeight < 0) {
      return fail("totalWeight", "must be a finite number >= 0, got " + it->dump());
    }
  }
  return h;
}

bool isPodUidChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

}  // namespace

std::string encodeCheckpoint(const ModelCheckpoint& c) {
  // Go's encoder writes struct fields in declaration order: UID, CPU, Memory,
  // LastUpdated. nlohmann's ordered_json keeps insertion order.
  nlohmann::ordered_json out;
  out["UID"] = c.uid;
  out["CPU"] = encodeHistogram(c.cpu);
  out["Memory"] = encodeHistogram(c.memory);
  out["LastUpdated"] = rfc3339(c.lastUpdated);
  return out.dump() + "\n";
}

Result<ModelCheckpoint> decodeCheckpoint(std::string_view text, const std::string& source) {
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return makeError(source + ": not JSON");
  if (!j.is_object()) return makeError(source + ": expected a JSON object");
  ModelCheckpoint c;
  if (const auto it = j.find("UID"); it != j.end() && it->is_string())
    c.uid = it->get<std::string>();
  for (auto [key, out] : {std::pair{"CPU", &c.cpu}, std::pair{"Memory", &c.memory}}) {
    const auto it = j.find(key);
    // A nil histogram: koordlet's LoadFromCheckpoint refuses it.
    if (it == j.end() || it->is_null()) return makeError(source + ": " + key + ": missing");
    auto h = decodeHistogram(*it, key);
    if (!h) return makeError(source + ": " + h.error().message);
    *out = std::move(*h);
  }
  const auto it = j.find("LastUpdated");
  if (it == j.end() || !it->is_string()) return makeError(source + ": LastUpdated: missing");
  auto t = parseRfc3339(it->get_ref<const std::string&>());
  if (!t) return makeError(source + ": LastUpdated: " + t.error().message);
  c.lastUpdated = *t;
  return c;
}

bool isModelId(std::string_view name) {
  if (name == "__node__") return true;
  if (name.size() >= 9 && name.substr(0, 7) == "__node-" && name.substr(name.size() - 2) == "__") {
    for (char c : name.substr(7, name.size() - 9)) {
      if (!isPodUidChar(c)) return false;
    }
    return true;
  }
  // A pod UID: 32 hex digits, dashed (the API server's UUIDs) or not (the hash the
  // kubelet gives a static pod).
  size_t hex = 0;
  for (char c : name) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) {
      ++hex;
    } else if (c != '-') {
      return false;
    }
  }
  return hex == 32 && name.size() <= 36 && name.front() != '-';
}

Status CheckpointDir::save(const ModelCheckpoint& c) const {
  if (!isModelId(c.uid))
    return makeError("model id " + quoteText(c.uid, 80) + " is not a file name");
  return replaceFile(dir_ + "/" + c.uid, encodeCheckpoint(c), 0600);
}

Status CheckpointDir::remove(std::string_view uid) const {
  if (!isModelId(uid)) return makeError("model id " + quoteText(uid, 80) + " is not a file name");
  const std::string path = dir_ + "/" + std::string(uid);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return makeError(path + ": " + std::strerror(errno), errno);
  }
  return Ok{};
}

Result<CheckpointDir::Restored> CheckpointDir::restore(
    const std::function<bool(std::string_view)>& known) const {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir_.c_str()), ::closedir);
  if (!d) return makeError(dir_ + ": " + std::strerror(errno), errno);
  Restored out;
  size_t seen = 0;
  auto unlinkFile = [&](const std::string& name) {
    if (::unlink((dir_ + "/" + name).c_str()) == 0) out.deleted.push_back(name);
  };
  while (const dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (++seen > kMaxFiles) {
      out.skipped.push_back("files past the first " + std::to_string(kMaxFiles) + ": not read");
      break;
    }
    const std::string path = dir_ + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      if (!S_ISDIR(st.st_mode)) out.skipped.push_back(quoteText(name, 80) + ": not a regular file");
      continue;  // koordlet walks into directories; we never write any
    }
    if (name.size() > kTmpSuffix.size() &&
        std::string_view(name).substr(name.size() - kTmpSuffix.size()) == kTmpSuffix) {
      if (isModelId(std::string_view(name).substr(0, name.size() - kTmpSuffix.size()))) {
        unlinkFile(name);  // a save cut short
      } else {
        out.skipped.push_back(quoteText(name, 80) + ": not ours, left alone");
      }
      continue;
    }
    if (!isModelId(name)) {
      out.skipped.push_back(quoteText(name, 80) + ": not a model id, left alone");
      continue;
    }
    if (static_cast<size_t>(st.st_size) > kMaxFileBytes) {
      out.skipped.push_back(name + ": " + std::to_string(st.st_size) + " bytes, over " +
                            std::to_string(kMaxFileBytes) + ": deleted");
      unlinkFile(name);
      continue;
    }
    auto text = readFile(path, kMaxFileBytes);
    if (!text) {
      out.skipped.push_back(text.error().message);
      continue;
    }
    auto c = decodeCheckpoint(*text, name);
    if (!c) {
      out.skipped.push_back(c.error().message + ": deleted");
      unlinkFile(name);
      continue;
    }
    c->uid = name;
    if (!known(name)) {
      unlinkFile(name);  // its pod left while we were down
      continue;
    }
    out.models.push_back(std::move(*c));
  }
  return out;
}

}  // namespace koord::prediction
