// resolveApiConfig: which API server the agent talks to, from its flags and
// environment: --kubeconfig, else the in-cluster service account, else none
// (standalone).
#include <catch2/catch.hpp>
#include <string>

#include "agent/cluster_link.h"
#include "tests/support/temp_tree.h"

namespace test_agent_cluster_link {  // this file's own names: tests build as unity chunks

using namespace koord;

namespace {

Options base(const test::TempTree& t) {
  Options o;
  o.serviceAccountDir = t.path("sa");
  return o;
}

}  // namespace

TEST_CASE("Without a kubeconfig or a cluster environment the agent is standalone") {
  test::TempTree t;
  auto r = resolveApiConfig(base(t));
  REQUIRE(r.ok());
  CHECK_FALSE(r->has_value());
}

TEST_CASE("In a pod the service account's token and CA locate and authenticate the API") {
  test::TempTree t({{"sa/token", "abc"}, {"sa/ca.crt", "-----BEGIN CERTIFICATE-----\n"}});
  Options o = base(t);
  o.kubernetesServiceHost = "10.96.0.1";
  o.kubernetesServicePort = "443";
  auto r = resolveApiConfig(o);
  REQUIRE(r.ok());
  REQUIRE(r->has_value());
  CHECK((*r)->server == "https://10.96.0.1:443");
  CHECK((*r)->tokenFile == t.path("sa/token"));
  CHECK((*r)->caFile == t.path("sa/ca.crt"));

  // The environment without a token: not in a cluster the agent can use.
  test::TempTree empty;
  Options none = base(empty);
  none.kubernetesServiceHost = "10.96.0.1";
  none.kubernetesServicePort = "443";
  auto s = resolveApiConfig(none);
  REQUIRE(s.ok());
  CHECK_FALSE(s->has_value());
}

TEST_CASE("--kubeconfig wins over the cluster environment and its errors name the flag") {
  test::TempTree t({{"sa/token", "abc"},
                    {"kc",
                     "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
                     "clusters:\n- name: c\n  cluster: {server: 'https://api:6443'}\n"
                     "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                     "users:\n- name: u\n  user: {token: t0k}\n"}});
  Options o = base(t);
  o.kubernetesServiceHost = "10.96.0.1";
  o.kubernetesServicePort = "443";
  o.kubeconfig = t.path("kc");
  auto r = resolveApiConfig(o);
  REQUIRE(r.ok());
  REQUIRE(r->has_value());
  CHECK((*r)->server == "https://api:6443");
  CHECK((*r)->token == "t0k");

  o.kubeconfig = t.path("missing");
  auto missing = resolveApiConfig(o);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.rfind("--kubeconfig: ", 0) == 0);
  CHECK(missing.error().message.find(t.path("missing")) != std::string::npos);

  t.write("bad", "clusters: [");
  o.kubeconfig = t.path("bad");
  auto bad = resolveApiConfig(o);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find(t.path("bad")) != std::string::npos);
}

}  // namespace test_agent_cluster_link
