// ContainerdNode: a real containerd (Debian's package, unpacked by
// tests/runtime/fetch-runtime.sh, never installed) serving CRI and NRI for one test,
// with everything it keeps under the test's scratch directory:
//
//   - its config (version 2 for containerd 1.7): root, state, the CRI and NRI sockets,
//     the native snapshotter, Debian's runc with the cgroupfs driver, NRI on with
//     external plugins allowed, the test image as the sandbox ("pause") image;
//   - a private mount namespace (unshare), with a tmpfs on /run/containerd for the
//     shims' sockets, so the sandboxes' mounts and the shims' sockets vanish with it;
//   - its process, its shims and every container in the test's CgroupV1Tree
//     (<tree>/runtime for containerd and the shims; the pods where the test's
//     cgroup parents put them), so the destructor SIGKILLs all that is left.
//
// The test image (tests/runtime/make-image.sh) is imported with ctr at start. stop()
// and start() restart containerd alone, as a node's upgrade does: the shims and
// containers keep running. Needs root. Set-up failures throw: this is test code.
#pragma once

#include <memory>
#include <string>

#include "tests/support/agent_process.h"
#include "tests/support/cgroup_v1_tree.h"

namespace koord::test {

class ContainerdNode {
 public:
  static constexpr const char* kImage = "docker.io/koordlet-test/busybox:1";

  struct Options {
    std::string runtimeRoot;  // the unpacked package: usr/bin/containerd, its shim, ctr
    std::string runc;         // Debian's runc binary
    std::string image;        // make-image.sh's OCI archive
    std::string dir;          // scratch: config, state, sockets, the log
    CgroupV1Tree* tree = nullptr;
  };

  // "" when `runtimeRoot` and `runc` have what a node needs and this machine can run it;
  // else why not.
  static std::string unavailableReason(const std::string& runtimeRoot, const std::string& runc);

  explicit ContainerdNode(Options o);  // start(), then the image imported
  ~ContainerdNode();
  ContainerdNode(const ContainerdNode&) = delete;
  ContainerdNode& operator=(const ContainerdNode&) = delete;

  // Starts containerd and waits until CRI answers (throws after 60 s).
  void start();
  // SIGTERM to containerd and waits for its exit; shims and containers stay.
  void stop();

  std::string criSocket() const { return o_.dir + "/containerd.sock"; }
  std::string nriSocket() const { return o_.dir + "/nri/nri.sock"; }
  // "containerd 1.7.24~ds1 ..." as `containerd --version` prints it, and runc's first line.
  std::string version() const;
  std::string log() const;

 private:
  std::string bin(const std::string& name) const;
  void writeConfig() const;

  Options o_;
  std::unique_ptr<AgentProcess> process_;
  int starts_ = 0;
};

}  // namespace koord::test
