// api_config: where the Kubernetes API server is and how to authenticate to it,
// resolved the way koordlet does (controller-runtime's config.GetConfig, reference
// koordlet.md §1.1): --kubeconfig when given; else, inside a pod, the service
// account (KUBERNETES_SERVICE_HOST/PORT, its token and ca.crt); else no API at all
// (standalone: the agent runs on the kubelet alone, as before the API client).
//
// Parsing is apart from I/O: parseKubeconfig takes the file's text, inClusterConfig
// the environment's values and whether the service-account files exist. File paths
// stay paths (the client reads them, and re-reads a token file when it rotates);
// *-data fields are decoded here.
//
// Decisions:
//  * Relative paths in a kubeconfig are relative to the kubeconfig's directory
//    (kubectl's rule).
//  * Exec and auth-provider credential plugins are refused with the field named: a
//    node agent cannot run a user's plugin, and a silent fallback to anonymous
//    would fail later and less clearly.
//  * A context, cluster or user named but missing is an error naming it; so is a
//    cluster without a server or a server that is not https:// or http://.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace koord {

struct ApiConfig {
  std::string server;  // "https://10.96.0.1:443"
  // Trust: a CA file or PEM data; neither with insecureSkipTlsVerify false means
  // the system's trust store.
  std::string caFile;
  std::string caData;
  bool insecureSkipTlsVerify = false;
  // Authentication: a bearer token (literal, or a file re-read as it rotates) or a
  // client certificate and key (files or PEM data).
  std::string token;
  std::string tokenFile;
  std::string clientCertFile;
  std::string clientCertData;
  std::string clientKeyFile;
  std::string clientKeyData;
  // Where this came from, for the start-up line and /config:
  // "kubeconfig /etc/k.conf (context ctx)" or "in-cluster service account".
  std::string source;
};

// Parses a kubeconfig (YAML or JSON). context: the one to use; "" takes
// current-context. path: the file's path, for relative paths and error messages.
Result<ApiConfig> parseKubeconfig(std::string_view text, const std::string& path,
                                  std::string_view context = "");

// What a pod's environment says about the API server.
struct InClusterEnv {
  std::string host;  // KUBERNETES_SERVICE_HOST
  std::string port;  // KUBERNETES_SERVICE_PORT
  // The service-account directory (/var/run/secrets/kubernetes.io/serviceaccount)
  // and whether its token file exists.
  std::string serviceAccountDir;
  bool tokenPresent = false;
};

// nullopt when not in a cluster (no host or port, or no token): standalone. An
// error when the environment is there but unusable (a port that is not a number).
Result<std::optional<ApiConfig>> inClusterConfig(const InClusterEnv& env);

// RFC 4648 base64 (the *-data fields), padding required, whitespace refused.
Result<std::string> decodeBase64(std::string_view text);

}  // namespace koord
