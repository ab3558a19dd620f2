// Tests for base/pinned_files: kernel files read again through an open descriptor
// give the kernel's current text; regular files are never held; dead descriptors,
// the cap and sweeps. The cgroup cases use this host's real cgroup v1 kernel (root).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "base/pinned_files.h"
#include "base/read_file.h"
#include "tests/support/skip.h"
#include "tests/support/temp_tree.h"

using namespace koord;
namespace fs = std::filesystem;

namespace {

// A private cgroup v1 cpu directory, removed after; "" when this host has none.
struct CpuCgroup {
  CpuCgroup() {
    if (::geteuid() != 0 || !fs::exists("/sys/fs/cgroup/cpu/cpu.shares")) return;
    dir = "/sys/fs/cgroup/cpu/koordlet-pinned-" + std::to_string(::getpid()) + "-" +
          std::to_string(std::random_device{}());
    if (::mkdir(dir.c_str(), 0755) != 0) dir.clear();
  }
  ~CpuCgroup() {
    if (!dir.empty()) ::rmdir(dir.c_str());
  }
  void setShares(int v) const { std::ofstream(dir + "/cpu.shares") << v << "\n"; }
  std::string dir;
};

}  // namespace

TEST_CASE("a cgroup file read again through its open descriptor gives the kernel's current value",
          "[pinned_files]") {
  CpuCgroup cg;
  if (cg.dir.empty()) {
    KOORDLET_SKIP("needs root and a cgroup v1 cpu hierarchy at /sys/fs/cgroup/cpu");
  }
  PinnedFiles files(16);
  const std::string shares = cg.dir + "/cpu.shares";
  cg.setShares(512);
  CHECK(*files.read(shares) == "512\n");
  CHECK(files.openCount() == 1);
  cg.setShares(256);
  CHECK(*files.read(shares) == "256\n");  // the same descriptor, regenerated at offset 0
  CHECK(files.openCount() == 1);

  // The cgroup goes: the descriptor answers ENODEV, is closed, and the fresh open
  // finds no file.
  REQUIRE(::rmdir(cg.dir.c_str()) == 0);
  auto gone = files.read(shares);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().sysErrno == ENOENT);
  CHECK(gone.error().message.find(shares) == 0);
  CHECK(files.openCount() == 0);

  // Made again under the same name: read through a new descriptor.
  REQUIRE(::mkdir(cg.dir.c_str(), 0755) == 0);
  CHECK(*files.read(shares) == "1024\n");
  REQUIRE(::rmdir(cg.dir.c_str()) == 0);
  cg.dir.clear();
  // Recreated between two reads, the old descriptor's ENODEV leads to the new one.
}

TEST_CASE("a cgroup removed and made again between two reads is read through a new descriptor",
          "[pinned_files]") {
  CpuCgroup cg;
  if (cg.dir.empty()) {
    KOORDLET_SKIP("needs root and a cgroup v1 cpu hierarchy at /sys/fs/cgroup/cpu");
  }
  PinnedFiles files(16);
  const std::string shares = cg.dir + "/cpu.shares";
  cg.setShares(300);
  CHECK(*files.read(shares) == "300\n");
  REQUIRE(::rmdir(cg.dir.c_str()) == 0);
  REQUIRE(::mkdir(cg.dir.c_str(), 0755) == 0);
  CHECK(*files.read(shares) == "1024\n");
  CHECK(files.openCount() == 1);
}

TEST_CASE("a regular file is never held open, so a file replaced behind it reads new",
          "[pinned_files]") {
  test::TempTree tree({{"a", "one\n"}});
  PinnedFiles files(16);
  CHECK(*files.read(tree.path("a")) == "one\n");
  CHECK(files.openCount() == 0);
  tree.write("a.new", "two\n");
  fs::rename(tree.path("a.new"), tree.path("a"));
  CHECK(*files.read(tree.path("a")) == "two\n");
  auto missing = files.read(tree.path("nope"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().sysErrno == ENOENT);
}

TEST_CASE("a kernel file longer than one buffer is read whole, and the cap refuses it",
          "[pinned_files]") {
  // kallsyms is megabytes, generated record by record: many preads at growing offsets.
  auto plain = readFile("/proc/kallsyms", 64u << 20);
  REQUIRE(plain.ok());
  REQUIRE(plain->size() > 100000);
  PinnedFiles files(16);
  auto pinned = files.read("/proc/kallsyms", 64u << 20);
  REQUIRE(pinned.ok());
  CHECK(*pinned == *plain);
  auto again = files.read("/proc/kallsyms", 64u << 20);  // the descriptor kept, from offset 0
  REQUIRE(again.ok());
  CHECK(again->size() == plain->size());
  CHECK(files.openCount() == 1);

  auto capped = files.read("/proc/kallsyms", 4096);
  REQUIRE_FALSE(capped.ok());
  CHECK(capped.error().sysErrno == EFBIG);
  CHECK(capped.error().message.find("larger than 4096 bytes") != std::string::npos);
}

TEST_CASE("past the cap files are read the plain way, and a sweep closes files not read",
          "[pinned_files]") {
  PinnedFiles files(1);
  CHECK(files.read("/proc/self/stat").ok());
  CHECK(files.read("/proc/loadavg").ok());  // over the cap: opened and closed
  CHECK(files.openCount() == 1);
  files.sweep();  // both read since the last sweep (none): kept
  CHECK(files.openCount() == 1);
  files.sweep();  // not read since: closed
  CHECK(files.openCount() == 0);
  CHECK(files.read("/proc/loadavg").ok());
  CHECK(files.openCount() == 1);
}

TEST_CASE("the soft limit on open files is raised to the hard limit", "[pinned_files]") {
  const uint64_t limit = raiseOpenFileLimit();
  CHECK(limit >= 1024);
  CHECK(raiseOpenFileLimit() == limit);
}
