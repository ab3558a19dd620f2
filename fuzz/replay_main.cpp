// The main of a fuzz target in a build without libFuzzer (meson -Dfuzz=false, g++):
// runs the target's entry point once over every file named, directories read
// recursively, as libFuzzer's `-runs=0 <dirs>` does. Arguments starting with '-'
// (libFuzzer options) are ignored so both builds take the same command line.
// Exits 1 when no input was found (a test that ran nothing must not pass).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

void collect(const fs::path& p, std::vector<fs::path>& out) {
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    for (const auto& e : fs::recursive_directory_iterator(p, ec)) {
      if (e.is_regular_file()) out.push_back(e.path());
    }
  } else if (fs::is_regular_file(p, ec)) {
    out.push_back(p);
  } else {
    std::fprintf(stderr, "replay: %s: no such file or directory\n", p.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    collect(argv[i], inputs);
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs\n");
    return 1;
  }
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "replay: %s: cannot read\n", path.c_str());
      return 1;
    }
    // A copy of exactly the input's size, so ASan sees a read past its end.
    std::vector<uint8_t> data(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(data.data(), data.size());
  }
  std::printf("replay: %zu inputs ran\n", inputs.size());
  return 0;
}
