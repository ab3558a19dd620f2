// FakeKernel: the resctrl filesystem's write semantics on a temp tree, behind the
// resctrl writer's ResctrlFileOps (a regular file cannot act as a kernfs schemata
// file: a one-line write must replace that resource only). Used by the writer's
// tests and the reconcile benchmark.
#pragma once

#include <cerrno>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/read_file.h"
#include "resctrl/resctrl_info.h"
#include "resctrl/resctrl_writer.h"

namespace koord::test {

using resctrl::ResctrlFileOps;
using resctrl::SchemataResource;
using resctrl::WriteMode;

// One call the writer made through ResctrlFileOps::write.
struct Call {
  std::string path;
  std::string data;
  WriteMode mode;
};

// Stands in for the resctrl filesystem's write semantics on a temp tree:
//  * mkdir of a group makes its schemata (a copy of `seed`, the root schemata unless
//    set) and an empty tasks file, as the kernel does;
//  * a schemata write of one line replaces that resource's values only, and prints
//    them back as the kernel does: masks zero-padded to 5 digits, MB right-aligned
//    in 4 columns ("0003f", "  40"), so a re-read needs the numeric comparison;
//  * a schemata line starting with `rejectPrefix` fails with EINVAL and puts
//    `rejectStatus` in info/last_cmd_status;
//  * a tasks write goes to the real default op (one O_APPEND write), except tids in
//    `vanished` (ESRCH) or `refused` (EINVAL).
struct FakeKernel {
  explicit FakeKernel(std::string resctrlRoot) : root(std::move(resctrlRoot)) {}

  ResctrlFileOps ops() {
    ResctrlFileOps o;
    o.write = [this](const std::string& path, std::string_view data, WriteMode mode) {
      calls.push_back({path, std::string(data), mode});
      return mode == WriteMode::kTasks ? writeTasks(path, data) : writeSchemata(path, data);
    };
    o.makeDir = [this](const std::string& path) {
      const int err = real.makeDir(path);
      if (err != 0) return err;
      made.push_back(path);
      writeText(path + "/schemata", seed.empty() ? contents(root + "/schemata") : seed);
      writeText(path + "/tasks", "");
      return 0;
    };
    return o;
  }

  int writeTasks(const std::string& path, std::string_view data) {
    const int tid = std::stoi(std::string(data));
    if (vanished.count(tid) != 0) return ESRCH;
    if (refused.count(tid) != 0) return EINVAL;
    return real.write(path, data, WriteMode::kTasks);
  }

  int writeSchemata(const std::string& path, std::string_view data) {
    if (!rejectPrefix.empty() && data.substr(0, rejectPrefix.size()) == rejectPrefix) {
      writeText(root + "/info/last_cmd_status", rejectStatus + "\n");
      return EINVAL;
    }
    auto line = resctrl::parseSchemata(data, "write");
    auto current = resctrl::parseSchemata(contents(path), path);
    if (!line || line->size() != 1 || !current) return EINVAL;
    const SchemataResource& w = line->front();
    std::string out;
    for (SchemataResource& r : *current) {
      if (r.name == w.name) {
        for (auto& d : r.domains) {
          for (const auto& nd : w.domains) {
            if (nd.id == d.id) d.value = nd.value;
          }
        }
      }
      out += r.name + ":";
      for (size_t i = 0; i < r.domains.size(); ++i) {
        const bool mb = r.name == "MB";
        const std::string& v = r.domains[i].value;
        const size_t width = mb ? 4 : 5;
        if (i > 0) out += ';';
        out += std::to_string(r.domains[i].id);
        out += '=';
        if (v.size() < width) out.append(width - v.size(), mb ? ' ' : '0');
        out += v;
      }
      out += "\n";
    }
    writeText(path, out);
    writeText(root + "/info/last_cmd_status", "ok\n");
    return 0;
  }

  static std::string contents(const std::string& path) {
    auto text = readFile(path);
    return text ? *text : std::string();
  }

  static void writeText(const std::string& path, const std::string& text) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) throw std::runtime_error("fake resctrl kernel: cannot write " + path);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }

  // The data of each call to `path`.
  std::vector<std::string> writesTo(const std::string& path) const {
    std::vector<std::string> out;
    for (const auto& c : calls) {
      if (c.path == path) out.push_back(c.data);
    }
    return out;
  }

  std::string root;
  std::string seed;
  std::vector<Call> calls;
  std::vector<std::string> made;
  std::set<int> vanished;
  std::set<int> refused;
  std::string rejectPrefix;
  std::string rejectStatus;
  ResctrlFileOps real = resctrl::systemResctrlFileOps();
};

}  // namespace koord::test
