// Tests for kube/api_config: kubeconfig parsing (contexts, relative paths, *-data,
// refusals naming the field), the in-cluster environment, base64.
#include <catch2/catch.hpp>

#include <string>

#include "kube/api_config.h"

namespace test_kube_api_config {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

// The shape kubeadm writes (admin.conf), with two contexts.
const char* kKubeconfig = R"(apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==
- name: lab
  cluster:
    server: https://lab.example:443
    certificate-authority: pki/ca.crt
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
- name: agent
  user:
    tokenFile: secrets/token
contexts:
- name: prod-admin
  context: {cluster: prod, user: admin}
- name: lab-agent
  context: {cluster: lab, user: agent}
current-context: prod-admin
)";

}  // namespace

TEST_CASE("a kubeconfig's current context gives its server, CA data and client certificate") {
  auto c = parseKubeconfig(kKubeconfig, "/etc/kubernetes/admin.conf");
  REQUIRE(c.ok());
  CHECK(c->server == "https://10.0.0.1:6443");
  CHECK(c->caData == "-----BEGIN CERTIFICATE-----\n");
  CHECK(c->caFile.empty());
  CHECK_FALSE(c->insecureSkipTlsVerify);
  CHECK(c->clientCertData == "cert");
  CHECK(c->clientKeyData == "key");
  CHECK(c->token.empty());
  CHECK(c->source == "kubeconfig /etc/kubernetes/admin.conf (context prod-admin)");
}

TEST_CASE("a named context is used over current-context, its paths relative to the file") {
  auto c = parseKubeconfig(kKubeconfig, "/etc/koordlet/kubeconfig", "lab-agent");
  REQUIRE(c.ok());
  CHECK(c->server == "https://lab.example:443");
  CHECK(c->caFile == "/etc/koordlet/pki/ca.crt");
  CHECK(c->insecureSkipTlsVerify);
  CHECK(c->tokenFile == "/etc/koordlet/secrets/token");
  CHECK(c->clientCertData.empty());
}

TEST_CASE("a kubeconfig that cannot be used is refused naming the file and field") {
  const std::string path = "/k.conf";
  auto error = [&](const std::string& text, std::string_view context = "") {
    auto c = parseKubeconfig(text, path, context);
    REQUIRE_FALSE(c.ok());
    return c.error().message;
  };
  CHECK(error(kKubeconfig, "nope") == "kubeconfig /k.conf: contexts: \"nope\" is not there");
  CHECK(error("clusters: [\n").find("kubeconfig /k.conf: not YAML: line ") == 0);
  CHECK(error("- a\n- b\n") == "kubeconfig /k.conf: expected an object at the top");
  CHECK(error("contexts: []\n") ==
        "kubeconfig /k.conf: current-context: not set and no context given");
  const std::string base =
      "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n";
  CHECK(error(base + "clusters:\n- name: k\n  cluster: {}\n") ==
        "kubeconfig /k.conf: clusters[k].cluster.server: missing");
  CHECK(error(base + "clusters:\n- name: k\n  cluster: {server: 10.0.0.1:6443}\n") ==
        "kubeconfig /k.conf: clusters[k].cluster.server: \"10.0.0.1:6443\" is not an http(s) URL");
  const std::string cluster = "clusters:\n- name: k\n  cluster: {server: 'https://a:6443'}\n";
  CHECK(error(base + cluster) == "kubeconfig /k.conf: users: \"u\" is not there");
  CHECK(error(base + cluster + "users:\n- name: u\n  user:\n    exec: {command: aws}\n") ==
        "kubeconfig /k.conf: users[u].user.exec: credential plugins are not supported; use a "
        "token, a token file or a client certificate");
  CHECK(error(base + cluster + "users:\n- name: u\n  user: {client-key: k.pem}\n") ==
        "kubeconfig /k.conf: users[u].user: a client key without its certificate");
  CHECK(error(base + cluster + "users:\n- name: u\n  user: {client-certificate-data: 'Y2!y'}\n") ==
        "kubeconfig /k.conf: users[u].user.client-certificate-data: invalid base64 character "
        "at offset 2");
  CHECK(error(base + cluster + "users:\n- name: u\n  user: {token: [a]}\n") ==
        "kubeconfig /k.conf: users[u].user.token: expected a string");
}

TEST_CASE("a context without a user is anonymous: the server decides") {
  auto c = parseKubeconfig(
      "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
      "clusters:\n- name: k\n  cluster: {server: 'http://127.0.0.1:8080'}\n",
      "/k.conf");
  REQUIRE(c.ok());
  CHECK(c->server == "http://127.0.0.1:8080");
  CHECK(c->token.empty());
  CHECK(c->tokenFile.empty());
}

TEST_CASE("in a pod the service account gives the server, its token file and CA") {
  const std::string sa = "/var/run/secrets/kubernetes.io/serviceaccount";
  auto c = inClusterConfig({"10.96.0.1", "443", sa, true});
  REQUIRE(c.ok());
  REQUIRE(c->has_value());
  CHECK((*c)->server == "https://10.96.0.1:443");
  CHECK((*c)->tokenFile == sa + "/token");
  CHECK((*c)->caFile == sa + "/ca.crt");
  CHECK((*c)->source == "in-cluster service account");

  auto v6 = inClusterConfig({"fd00::1", "443", sa, true});
  REQUIRE(v6.ok());
  CHECK((*v6)->server == "https://[fd00::1]:443");
}

TEST_CASE("without the service environment or token the agent is standalone") {
  CHECK_FALSE(inClusterConfig({"", "443", "/sa", true})->has_value());
  CHECK_FALSE(inClusterConfig({"10.96.0.1", "", "/sa", true})->has_value());
  CHECK_FALSE(inClusterConfig({"10.96.0.1", "443", "/sa", false})->has_value());
  for (const char* bad : {"https", "0", "65536", "-1", "443 "}) {
    INFO(bad);
    auto c = inClusterConfig({"10.96.0.1", bad, "/sa", true});
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message.find("KUBERNETES_SERVICE_PORT") == 0);
  }
}

TEST_CASE("base64 decodes RFC 4648 text with padding and refuses anything else") {
  CHECK(*decodeBase64("") == "");
  CHECK(*decodeBase64("Zg==") == "f");
  CHECK(*decodeBase64("Zm8=") == "fo");
  CHECK(*decodeBase64("Zm9v") == "foo");
  CHECK(*decodeBase64("Zm9vYmFy") == "foobar");
  CHECK(*decodeBase64("+/+/") == std::string("\xfb\xff\xbf"));
  for (const char* bad : {"Zg", "Zg=", "Z===", "Zg=a", "=Zg=", "Zm9v\n", "Zm 9", "Zm9-"}) {
    INFO(bad);
    CHECK_FALSE(decodeBase64(bad).ok());
  }
}

}  // namespace test_kube_api_config
