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

namespace test_base_pinned_files {  // this file's own names: tests build as unity chunks

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
  FileBudget budget(16);
  std::string buf;
  PinnedFile shares(cg.dir + "/cpu.shares", budget);
  cg.setShares(512);
  CHECK(*shares.read(buf) == "512\n");
  CHECK(shares.held());
  CHECK(budget.open() == 1);
  cg.setShares(256);
  CHECK(*shares.read(buf) == "256\n");  // the same descriptor, regenerated at offset 0
  CHECK(budget.open() == 1);

  // The cgroup goes: the descriptor answers ENODEV, is closed, and the fresh open
  // finds no file.
  REQUIRE(::rmdir(cg.dir.c_str()) == 0);
  auto gone = shares.read(buf);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().sysErrno == ENOENT);
  CHECK(gone.error().message.find(shares.path()) == 0);
  CHECK_FALSE(shares.held());
  CHECK(budget.open() == 0);

  // Made again under the same name: read through a new descriptor.
  REQUIRE(::mkdir(cg.dir.c_str(), 0755) == 0);
  CHECK(*shares.read(buf) == "1024\n");
  CHECK(budget.open() == 1);
}

TEST_CASE("a cgroup removed and made again between two reads is read through a new descriptor",
          "[pinned_files]") {
  CpuCgroup cg;
  if (cg.dir.empty()) {
    KOORDLET_SKIP("needs root and a cgroup v1 cpu hierarchy at /sys/fs/cgroup/cpu");
  }
  FileBudget budget(16);
  std::string buf;
  {
    PinnedFile shares(cg.dir + "/cpu.shares", budget);
    cg.setShares(300);
    CHECK(*shares.read(buf) == "300\n");
    REQUIRE(::rmdir(cg.dir.c_str()) == 0);
    REQUIRE(::mkdir(cg.dir.c_str(), 0755) == 0);
    CHECK(*shares.read(buf) == "1024\n");  // ENODEV, then the new cgroup's file
    CHECK(budget.open() == 1);
  }
  CHECK(budget.open() == 0);  // destroyed: closed and given back
}

TEST_CASE("a regular file is never held open, so a file replaced behind it reads new",
          "[pinned_files]") {
  test::TempTree tree({{"a", "one\n"}});
  FileBudget budget(16);
  std::string buf;
  PinnedFile a(tree.path("a"), budget);
  CHECK(*a.read(buf) == "one\n");
  CHECK_FALSE(a.held());
  tree.write("a.new", "two\n");
  fs::rename(tree.path("a.new"), tree.path("a"));
  CHECK(*a.read(buf) == "two\n");
  PinnedFile missing(tree.path("nope"), budget);
  auto text = missing.read(buf);
  REQUIRE_FALSE(text.ok());
  CHECK(text.error().sysErrno == ENOENT);
  CHECK(budget.open() == 0);
}

TEST_CASE("a kernel file longer than one read is read whole, and the cap refuses it",
          "[pinned_files]") {
  // kallsyms is megabytes, handed out a page at a time: many preads at growing
  // offsets, and from offset 0 again on the second read.
  auto plain = readFile("/proc/kallsyms", 64u << 20);
  REQUIRE(plain.ok());
  REQUIRE(plain->size() > 100000);
  FileBudget budget(16);
  std::string buf;
  PinnedFile syms("/proc/kallsyms", budget);
  auto pinned = syms.read(buf, 64u << 20);
  REQUIRE(pinned.ok());
  CHECK(*pinned == *plain);
  auto again = syms.read(buf, 64u << 20);
  REQUIRE(again.ok());
  CHECK(*again == *plain);
  CHECK(syms.held());

  auto capped = syms.read(buf, 4096);
  REQUIRE_FALSE(capped.ok());
  CHECK(capped.error().sysErrno == EFBIG);
  CHECK(capped.error().message.find("larger than 4096 bytes") != std::string::npos);
}

TEST_CASE("past the budget kernel files are read the plain way", "[pinned_files]") {
  FileBudget budget(1);
  std::string buf;
  PinnedFile stat("/proc/self/stat", budget);
  PinnedFile load("/proc/loadavg", budget);
  CHECK(stat.read(buf).ok());
  CHECK(load.read(buf).ok());  // over the budget: opened and closed
  CHECK(stat.held());
  CHECK_FALSE(load.held());
  CHECK(budget.open() == 1);
  // Moved, the descriptor goes with it and is given back once.
  PinnedFile moved(std::move(stat));
  CHECK(moved.held());
  CHECK(moved.read(buf).ok());
  CHECK(budget.open() == 1);
}

TEST_CASE("the soft limit on open files is raised to the hard limit", "[pinned_files]") {
  const uint64_t limit = raiseOpenFileLimit();
  CHECK(limit >= 1024);
  CHECK(raiseOpenFileLimit() == limit);
}

TEST_CASE("a file made by one show is read whole in one read, as the plain way reads it",
          "[pinned_files]") {
  // /proc/self/status is a single_open file (one show); its text changes between
  // reads only in counters, so the two reads are compared by their first line.
  FileBudget budget(16);
  std::string buf;
  PinnedFile status("/proc/self/status", budget, PinnedFile::Whole::kOneShow);
  auto once = status.read(buf);
  REQUIRE(once.ok());
  auto plain = readFile("/proc/self/status");
  REQUIRE(plain.ok());
  CHECK(once->substr(0, once->find('\n')) == plain->substr(0, plain->find('\n')));
  CHECK(once->back() == '\n');
  CHECK(once->find("\nVmRSS:") != std::string::npos);
  CHECK(once->find("\nnonvoluntary_ctxt_switches:") != std::string::npos);  // the last line
  CHECK(status.held());
}

TEST_CASE("a cgroup's memory.stat read in one read equals its text read to the end",
          "[pinned_files]") {
  if (::geteuid() != 0 || !fs::exists("/sys/fs/cgroup/memory/memory.stat")) {
    KOORDLET_SKIP("needs root and a cgroup v1 memory hierarchy at /sys/fs/cgroup/memory");
  }
  const std::string dir = "/sys/fs/cgroup/memory/koordlet-pinned-" + std::to_string(::getpid());
  REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  FileBudget budget(16);
  std::string buf;
  std::string once;
  {
    PinnedFile stat(dir + "/memory.stat", budget, PinnedFile::Whole::kOneShow);
    auto text = stat.read(buf);
    REQUIRE(text.ok());
    once = *text;
  }
  auto plain = readFile(dir + "/memory.stat");
  ::rmdir(dir.c_str());
  REQUIRE(plain.ok());
  CHECK(once.find("\ntotal_unevictable ") != std::string::npos);  // near its end
  CHECK(once == *plain);  // an empty cgroup: nothing in it changes between the reads
}

TEST_CASE("a file made record by record, said to be one show, stops after its first page",
          "[pinned_files]") {
  // The contract, shown: kallsyms hands out a page a time, so one read that
  // returns less than it asked for is taken as the end. Callers say kOneShow
  // only of files made in one show.
  FileBudget budget(16);
  std::string buf;
  PinnedFile syms("/proc/kallsyms", budget, PinnedFile::Whole::kOneShow);
  auto first = syms.read(buf, 64u << 20);
  REQUIRE(first.ok());
  CHECK(first->size() <= 16384);
  PinnedFile whole("/proc/kallsyms", budget);
  auto all = whole.read(buf, 64u << 20);
  REQUIRE(all.ok());
  CHECK(all->size() > 100000);
}

}  // namespace test_base_pinned_files
