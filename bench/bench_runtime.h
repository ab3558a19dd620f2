// The runtime a CRI benchmark talks to (nri_create_latency, sandbox_latency): its own
// containerd from an unpacked package root on a private cgroup v1 tree (root), or
// "system": the node's containerd (the v2-node guest), its CRI and NRI at their
// default sockets. Also the agent flags that point at it. Benchmark code: set-up
// failures throw.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/support/cgroup_v1_tree.h"
#include "tests/support/containerd_node.h"
#include "tests/support/temp_tree.h"

namespace koord::bench {

struct BenchRuntime {
  std::unique_ptr<koord::test::CgroupV1Tree> tree;    // null on "system"
  std::unique_ptr<koord::test::ContainerdNode> node;  // null on "system"

  bool own() const { return node != nullptr; }
  std::string criSocket() const {
    return node ? node->criSocket() : "/run/containerd/containerd.sock";
  }
  std::string nriSocket() const { return node ? node->nriSocket() : "/var/run/nri/nri.sock"; }
  // Where the agent finds the cgroups and the runtime.
  std::vector<std::string> agentFlags(const koord::test::TempTree& tmp) const {
    std::vector<std::string> where = {"--proc-root-dir=/proc/"};
    if (node) {
      where.insert(where.end(), {"--cgroup-root-dir=" + tree->linkDir(),
                                 "--var-run-root-dir=" + tmp.path("containerd"),
                                 "--runtime-hooks-nri-socket-path=nri/nri.sock"});
    } else {  // the node's v2 root (libcgroup finds it), NRI at its default socket
      where.insert(where.end(), {"--sys-root-dir=/sys/", "--var-run-root-dir=/var/run/"});
    }
    return where;
  }
};

// "" when `runtimeRoot` ("system" or a package root) can run here; else why not.
inline std::string benchRuntimeUnavailable(const std::string& runtimeRoot,
                                           const std::string& runc) {
  if (runtimeRoot == "system") return "";
  if (std::string why = koord::test::CgroupV1Tree::unavailableReason(); !why.empty()) return why;
  return koord::test::ContainerdNode::unavailableReason(runtimeRoot, runc);
}

// Starts the runtime (nothing on "system"), the tree with the kubelet's QoS dirs.
inline BenchRuntime startBenchRuntime(const std::string& tag, const koord::test::TempTree& tmp,
                                      const std::string& runtimeRoot, const std::string& runc,
                                      const std::string& image) {
  BenchRuntime r;
  if (runtimeRoot == "system") return r;
  r.tree = std::make_unique<koord::test::CgroupV1Tree>(tag, tmp.path("cgroup"));
  r.tree->mkdirs("kubepods/besteffort");
  r.tree->mkdirs("kubepods/burstable");
  r.node = std::make_unique<koord::test::ContainerdNode>(koord::test::ContainerdNode::Options{
      runtimeRoot, runc, image, tmp.path("containerd"), r.tree.get()});
  return r;
}

}  // namespace koord::bench
