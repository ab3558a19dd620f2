#include "tests/support/containerd_node.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "tests/support/cri_client.h"

namespace koord::test {
namespace {

namespace fs = std::filesystem;

// Runs `command` (through /bin/sh) and returns its stdout; throws on a non-zero exit.
std::string output(const std::string& command) {
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("popen: " + command);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = ::pclose(p);
  if (rc != 0)
    throw std::runtime_error(command + ": exit status " + std::to_string(rc) + "\n" + out);
  return out;
}

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

std::string ContainerdNode::unavailableReason(const std::string& runtimeRoot,
                                              const std::string& runc) {
  if (::geteuid() != 0) return "a container runtime needs root";
  for (const std::string& path :
       {runtimeRoot + "/usr/bin/containerd", runtimeRoot + "/usr/bin/containerd-shim-runc-v2",
        runtimeRoot + "/usr/bin/ctr", runc}) {
    if (::access(path.c_str(), X_OK) != 0) {
      return path + " is missing (tests/runtime/fetch-runtime.sh unpacks it)";
    }
  }
  if (std::system("command -v unshare >/dev/null 2>&1") != 0) return "no unshare (util-linux)";
  return "";
}

ContainerdNode::ContainerdNode(Options o) : o_(std::move(o)) {
  if (o_.tree == nullptr) throw std::invalid_argument("ContainerdNode: no cgroup tree");
  fs::create_directories(o_.dir + "/nri/conf.d");
  fs::create_directories(o_.dir + "/nri/plugins");
  fs::create_directories(o_.dir + "/cni/bin");
  fs::create_directories(o_.dir + "/cni/conf");
  o_.tree->mkdirs("runtime");
  writeConfig();
  start();
  // containerd 2.x's ctr imports through the transfer service, which unpacks only for
  // configured platform/snapshotter pairs (none for native: "no unpack platforms
  // defined"); --local imports in ctr itself, as 1.7's ctr always does (1.7 lacks the flag).
  const bool v2 =
      output(bin("usr/bin/containerd") + " --version").find(" v2.") != std::string::npos;
  output(bin("usr/bin/ctr") + " --address " + criSocket() + " -n k8s.io images import " +
         (v2 ? "--local " : "") + "--snapshotter native " + o_.image + " 2>&1");
}

ContainerdNode::~ContainerdNode() {
  try {
    stop();
  } catch (...) {
  }
  o_.tree->killAll();  // the shims and every container left
  if (const char* keep = std::getenv("KOORDLET_CONTAINERD_DEBUG");
      keep && std::string(keep) == "1") {
    const std::string kept =
        fs::temp_directory_path() / ("koordlet-containerd-" + std::to_string(::getpid()) + ".log");
    std::ofstream(kept) << log();
    std::fprintf(stderr, "containerd's log kept in %s\n", kept.c_str());
  }
}

std::string ContainerdNode::bin(const std::string& name) const {
  return o_.runtimeRoot + "/" + name;
}

void ContainerdNode::writeConfig() const {
  const std::string& d = o_.dir;
  std::ofstream out(d + "/config.toml");
  // KOORDLET_CONTAINERD_DEBUG=1: containerd's and the shims' debug messages in its log
  // (runc's own error lines among them), for a failing run.
  const char* debug = std::getenv("KOORDLET_CONTAINERD_DEBUG");
  out << "version = 2\n"
      << "root = \"" << d << "/root\"\n"
      << "state = \"" << d << "/state\"\n"
      << "disabled_plugins = [\"io.containerd.snapshotter.v1.aufs\", "
         "\"io.containerd.snapshotter.v1.btrfs\", \"io.containerd.snapshotter.v1.zfs\", "
         "\"io.containerd.snapshotter.v1.devmapper\", \"io.containerd.tracing.processor.v1.otlp\", "
         "\"io.containerd.internal.v1.tracing\"]\n"
      << (debug != nullptr && std::string(debug) == "1" ? "[debug]\n  level = \"debug\"\n" : "")
      << "[grpc]\n  address = \"" << criSocket() << "\"\n"
      << "[ttrpc]\n  address = \"" << criSocket() << ".ttrpc\"\n"
      << "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
      << "  sandbox_image = \"" << kImage
      << "\"\n"
      // The sandbox's oom_score_adj -998 needs CAP_SYS_RESOURCE, which root lacks in
      // the build VMs (CapEff without bit 24): containerd then keeps it at its own.
      << "  restrict_oom_score_adj = true\n"
      << "  [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
      << "    snapshotter = \"native\"\n"
      << "    default_runtime_name = \"runc\"\n"
      << "    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
      << "      runtime_type = \"io.containerd.runc.v2\"\n"
      << "      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
      << "        BinaryName = \"" << o_.runc << "\"\n"
      << "        SystemdCgroup = false\n"
      << "  [plugins.\"io.containerd.grpc.v1.cri\".cni]\n"
      << "    bin_dir = \"" << d << "/cni/bin\"\n"
      << "    conf_dir = \"" << d << "/cni/conf\"\n"
      << "[plugins.\"io.containerd.nri.v1.nri\"]\n"
      << "  disable = false\n"
      << "  disable_connections = false\n"
      << "  plugin_config_path = \"" << d << "/nri/conf.d\"\n"
      << "  plugin_path = \"" << d << "/nri/plugins\"\n"
      << "  plugin_registration_timeout = \"5s\"\n"
      << "  plugin_request_timeout = \"2s\"\n"
      << "  socket_path = \"" << nriSocket() << "\"\n"
      << "[plugins.\"io.containerd.internal.v1.opt\"]\n"
      << "  path = \"" << d << "/opt\"\n";
  if (!out.flush()) throw std::runtime_error("cannot write " + d + "/config.toml");
}

void ContainerdNode::start() {
  if (process_ && process_->running()) return;
  // The shell joins the runtime cgroup, then becomes containerd in its own mount
  // namespace with a private /run/containerd (the mount point is made on the host).
  std::string procs;
  for (const std::string& c : CgroupV1Tree::controllers()) {
    procs += " " + o_.tree->kernelPath(c, "runtime", "cgroup.procs");
  }
  const std::string script =
      "set -e; for f in" + procs +
      "; do echo $$ > \"$f\"; done; mkdir -p /run/containerd; "
      "export PATH=" +
      o_.runtimeRoot +
      "/usr/bin:$PATH; "
      "exec unshare --mount --propagation private -- /bin/sh -c "
      "'mount -t tmpfs -o mode=0711 koordlet-test /run/containerd && exec \"$@\"' sh "
      "containerd --config " +
      o_.dir + "/config.toml";
  ++starts_;
  process_ = std::make_unique<AgentProcess>(
      "/bin/sh", std::vector<std::string>{"-c", script},
      o_.dir + "/containerd-" + std::to_string(starts_) + ".log", "containerd-test-node");
  CriClient cri(criSocket(), std::chrono::seconds(2));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    try {
      cri.version();
      return;
    } catch (const std::exception& e) {
      if (!process_->running()) throw std::runtime_error("containerd exited:\n" + log());
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error(std::string("containerd's CRI did not answer: ") + e.what() +
                                 "\n" + log());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

void ContainerdNode::stop() {
  if (!process_) return;
  process_->terminate(std::chrono::seconds(20));
  process_.reset();
}

std::string ContainerdNode::version() const {
  return firstLine(output(bin("usr/bin/containerd") + " --version")) + "; " +
         firstLine(output(o_.runc + " --version"));
}

std::string ContainerdNode::log() const {
  std::string all;
  for (int i = 1; i <= starts_; ++i) {
    all += readTextFile(o_.dir + "/containerd-" + std::to_string(i) + ".log");
  }
  return all;
}

}  // namespace koord::test
