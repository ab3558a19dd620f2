#include "kube/api_config.h"

#include <array>
#include <cstdint>
#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "base/quote.h"
#include "base/text_scan.h"

namespace koord {
namespace {

// Errors name the file and the field: "kubeconfig /k.conf: users[admin].user.token: ...".
class Where {
 public:
  explicit Where(std::string file) : file_(std::move(file)) {}
  Error at(const std::string& field, const std::string& why) const {
    return makeError("kubeconfig " + file_ + ": " + field + ": " + why);
  }
  Error top(const std::string& why) const { return makeError("kubeconfig " + file_ + ": " + why); }

 private:
  std::string file_;
};

// A string field of a map: absent -> "", a non-scalar -> error.
Result<std::string> scalar(const YAML::Node& map, const char* key, const std::string& field,
                           const Where& where) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return std::string();
  if (!v.IsScalar()) return where.at(field + "." + key, "expected a string");
  return v.Scalar();
}

// The entry of `list` (clusters, users, contexts) named `name`: its inner map
// (`inner`: "cluster", "user", "context").
Result<YAML::Node> named(const YAML::Node& root, const char* list, const char* inner,
                         const std::string& name, const Where& where) {
  const YAML::Node items = root[list];
  if (items && !items.IsNull() && !items.IsSequence()) return where.at(list, "expected a list");
  if (items && items.IsSequence()) {
    for (const YAML::Node& item : items) {
      if (!item.IsMap()) return where.at(list, "every entry must be an object");
      const YAML::Node n = item["name"];
      if (!n || !n.IsScalar() || n.Scalar() != name) continue;
      const YAML::Node body = item[inner];
      if (!body || body.IsNull()) return YAML::Node(YAML::NodeType::Map);
      if (!body.IsMap()) {
        return where.at(std::string(list) + "[" + name + "]." + inner, "expected an object");
      }
      return body;
    }
  }
  return where.at(list, quoteText(name, 80) + " is not there");
}

// A path in the kubeconfig, relative to its directory.
std::string resolve(const std::string& file, const std::string& kubeconfigPath) {
  if (file.empty() || file.front() == '/') return file;
  return (std::filesystem::path(kubeconfigPath).parent_path() / file).string();
}

bool truthy(const std::string& v) { return v == "true" || v == "True" || v == "TRUE"; }

}  // namespace

Result<std::string> decodeBase64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) return makeError("base64 length is not a multiple of 4");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    std::array<int, 4> v{};
    int pad = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      // '=' only as the last one or two characters of the text.
      if (c == '=' && i + 4 == text.size() && j >= 2 && (j == 3 || text[i + 3] == '=')) {
        ++pad;
        v[j] = 0;
        continue;
      }
      v[j] = value(c);
      if (v[j] < 0 || pad > 0) {
        return makeError("invalid base64 character at offset " + std::to_string(i + j));
      }
    }
    const uint32_t n =
        (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return out;
}

Result<ApiConfig> parseKubeconfig(std::string_view text, const std::string& path,
                                  std::string_view context) {
  const Where where(path);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return where.top("not YAML: line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) return where.top("expected an object at the top");

  std::string contextName(context);
  if (contextName.empty()) {
    auto current = scalar(root, "current-context", "", where);
    if (!current) return current.error();
    contextName = *current;
    if (contextName.empty()) return where.at("current-context", "not set and no context given");
  }
  auto ctx = named(root, "contexts", "context", contextName, where);
  if (!ctx) return ctx.error();
  const std::string ctxField = "contexts[" + contextName + "].context";
  auto clusterName = scalar(*ctx, "cluster", ctxField, where);
  if (!clusterName) return clusterName.error();
  auto userName = scalar(*ctx, "user", ctxField, where);
  if (!userName) return userName.error();
  if (clusterName->empty()) return where.at(ctxField + ".cluster", "missing");

  ApiConfig out;
  out.source = "kubeconfig " + path + " (context " + contextName + ")";

  auto cluster = named(root, "clusters", "cluster", *clusterName, where);
  if (!cluster) return cluster.error();
  const std::string cf = "clusters[" + *clusterName + "].cluster";
  auto server = scalar(*cluster, "server", cf, where);
  if (!server) return server.error();
  if (server->empty()) return where.at(cf + ".server", "missing");
  if (server->rfind("https://", 0) != 0 && server->rfind("http://", 0) != 0) {
    return where.at(cf + ".server", quoteText(*server, 80) + " is not an http(s) URL");
  }
  out.server = *server;
  auto caFile = scalar(*cluster, "certificate-authority", cf, where);
  auto caData = scalar(*cluster, "certificate-authority-data", cf, where);
  auto insecure = scalar(*cluster, "insecure-skip-tls-verify", cf, where);
  for (auto* r : {&caFile, &caData, &insecure}) {
    if (!*r) return r->error();
  }
  out.caFile = resolve(*caFile, path);
  if (!caData->empty()) {
    auto pem = decodeBase64(*caData);
    if (!pem) return where.at(cf + ".certificate-authority-data", pem.error().message);
    out.caData = std::move(*pem);
  }
  out.insecureSkipTlsVerify = truthy(*insecure);

  if (userName->empty()) return out;  // anonymous: the server decides
  auto user = named(root, "users", "user", *userName, where);
  if (!user) return user.error();
  const std::string uf = "users[" + *userName + "].user";
  for (const char* plugin : {"exec", "auth-provider"}) {
    if ((*user)[plugin]) {
      return where.at(uf + "." + plugin,
                      "credential plugins are not supported; use a token, "
                      "a token file or a client certificate");
    }
  }
  struct Field {
    const char* key;
    std::string* into;
    bool file;    // a path: relative to the kubeconfig
    bool base64;  // *-data
  };
  const Field fields[] = {{"token", &out.token, false, false},
                          {"tokenFile", &out.tokenFile, true, false},
                          {"client-certificate", &out.clientCertFile, true, false},
                          {"client-certificate-data", &out.clientCertData, false, true},
                          {"client-key", &out.clientKeyFile, true, false},
                          {"client-key-data", &out.clientKeyData, false, true}};
  for (const Field& f : fields) {
    auto v = scalar(*user, f.key, uf, where);
    if (!v) return v.error();
    if (f.base64 && !v->empty()) {
      auto decoded = decodeBase64(*v);
      if (!decoded) return where.at(uf + "." + f.key, decoded.error().message);
      *f.into = std::move(*decoded);
    } else {
      *f.into = f.file ? resolve(*v, path) : *v;
    }
  }
  const bool cert = !out.clientCertFile.empty() || !out.clientCertData.empty();
  const bool key = !out.clientKeyFile.empty() || !out.clientKeyData.empty();
  if (cert != key) {
    return where.at(
        uf, cert ? "a client certificate without its key" : "a client key without its certificate");
  }
  return out;
}

Result<std::optional<ApiConfig>> inClusterConfig(const InClusterEnv& env) {
  if (env.host.empty() || env.port.empty() || !env.tokenPresent) {
    return std::optional<ApiConfig>();
  }
  uint64_t port = 0;
  if (text::toU64(env.port, port) != nullptr || port == 0 || port > 65535) {
    return makeError("KUBERNETES_SERVICE_PORT " + quoteText(env.port, 20) + " is not a port");
  }
  ApiConfig out;
  // An IPv6 service address goes in brackets (net.JoinHostPort).
  const bool v6 = env.host.find(':') != std::string::npos;
  out.server = "https://" + (v6 ? "[" + env.host + "]" : env.host) + ":" + env.port;
  out.tokenFile = env.serviceAccountDir + "/token";
  out.caFile = env.serviceAccountDir + "/ca.crt";
  out.source = "in-cluster service account";
  return std::optional<ApiConfig>(std::move(out));
}

}  // namespace koord
