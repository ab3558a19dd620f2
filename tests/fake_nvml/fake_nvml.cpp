// A stand-in for NVIDIA's libnvidia-ml.so.1, for the machines CI runs on (no GPU, no
// driver): the NVML functions the agent calls, by their exported names and with the
// C layouts of nvml.h (checked against NVML's own header, CUDA 11.8, and the R535
// library's exports when written), over a node described in a JSON file.
//
// FAKE_NVML_STATE names the file, read again at every call so that a test changes
// the node between calls: {"init": rc, "driver": "...", "cuda": 12020, "devices":
// [{"uuid", "minor", "name", "memTotal", "memUsed", "util", "busId", "memoryRc",
// "supportedEvents", "registerRc", "processes": [{"pid", "mem", "sm"}]}]}.
// FAKE_NVML_EVENTS names a file of events, a line each, read as they are appended:
// "<device index> xid <n>", "<device index> dbe", "-1 xid <n>" (no device named),
// "lost" (the wait says a GPU is lost).
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "gpu/nvml_abi.h"

namespace {

namespace nvml = koord::nvml;
using nlohmann::json;

json state() {
  const char* path = std::getenv("FAKE_NVML_STATE");
  if (!path) return json::object();
  std::ifstream in(path);
  json j = json::parse(in, nullptr, false);
  return j.is_discarded() ? json::object() : j;
}

bool initialised = false;

json device(nvml::Device dev) {
  const auto i = reinterpret_cast<uintptr_t>(dev) - 0x1000;
  const json s = state();
  if (!s.contains("devices") || i >= s["devices"].size()) return json();
  return s["devices"][i];
}

nvml::Device handleOf(unsigned i) { return reinterpret_cast<nvml::Device>(uintptr_t{0x1000} + i); }

nvml::Return copyString(const std::string& v, char* buf, unsigned size) {
  if (v.size() + 1 > size) return nvml::kErrorInsufficientSize;
  std::memcpy(buf, v.c_str(), v.size() + 1);
  return nvml::kSuccess;
}

template <typename Info>
nvml::Return processes(nvml::Device dev, unsigned* count, Info* infos) {
  const json d = device(dev);
  if (d.is_null()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  const json& ps = d.value("processes", json::array());
  if (*count < ps.size()) {
    *count = static_cast<unsigned>(ps.size());
    return nvml::kErrorInsufficientSize;
  }
  *count = static_cast<unsigned>(ps.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    infos[i] = Info{};
    infos[i].pid = ps[i]["pid"].get<unsigned>();
    infos[i].usedGpuMemory = ps[i]["mem"].get<unsigned long long>();
  }
  return nvml::kSuccess;
}

size_t eventsRead = 0;  // lines of FAKE_NVML_EVENTS already returned

}  // namespace

extern "C" {

nvml::Return nvmlInit_v2() {
  const nvml::Return rc = state().value("init", 0);
  initialised = rc == nvml::kSuccess;
  return rc;
}

nvml::Return nvmlShutdown() {
  initialised = false;
  return nvml::kSuccess;
}

const char* nvmlErrorString(nvml::Return rc) {
  // Messages in the library's own memory, as NVML's are (the agent must copy them
  // before it unloads the library).
  switch (rc) {
    case 9:
      return "Driver Not Loaded";
    case nvml::kErrorNotSupported:
      return "Not Supported";
    case nvml::kErrorGpuIsLost:
      return "GPU is lost";
    case nvml::kErrorTimeout:
      return "Timeout";
    default:
      return "Unknown Error";
  }
}

nvml::Return nvmlSystemGetDriverVersion(char* buf, unsigned size) {
  return copyString(state().value("driver", ""), buf, size);
}

nvml::Return nvmlSystemGetCudaDriverVersion_v2(int* v) {
  *v = state().value("cuda", 0);
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetCount_v2(unsigned* n) {
  if (!initialised) return 1;  // NVML_ERROR_UNINITIALIZED
  *n = static_cast<unsigned>(state().value("devices", json::array()).size());
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetHandleByIndex_v2(unsigned i, nvml::Device* dev) {
  if (device(handleOf(i)).is_null()) return 2;
  *dev = handleOf(i);
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetUUID(nvml::Device dev, char* buf, unsigned size) {
  return copyString(device(dev).value("uuid", ""), buf, size);
}

nvml::Return nvmlDeviceGetName(nvml::Device dev, char* buf, unsigned size) {
  return copyString(device(dev).value("name", ""), buf, size);
}

nvml::Return nvmlDeviceGetMinorNumber(nvml::Device dev, unsigned* minor) {
  *minor = device(dev).value("minor", 0u);
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetMemoryInfo(nvml::Device dev, nvml::Memory* m) {
  const json d = device(dev);
  if (const nvml::Return rc = d.value("memoryRc", 0); rc != nvml::kSuccess) return rc;
  m->total = d.value("memTotal", 0ull);
  m->used = d.value("memUsed", 0ull);
  m->free = m->total - m->used;
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetPciInfo_v3(nvml::Device dev, nvml::PciInfo* pci) {
  *pci = nvml::PciInfo{};
  const std::string id = device(dev).value("busId", "");
  std::strncpy(pci->busId, id.c_str(), sizeof pci->busId - 1);
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetUtilizationRates(nvml::Device dev, nvml::Utilization* u) {
  u->gpu = device(dev).value("util", 0u);
  u->memory = 0;
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceGetComputeRunningProcesses_v2(nvml::Device dev, unsigned* count,
                                                     nvml::ProcessInfoV2* infos) {
  return processes(dev, count, infos);
}

nvml::Return nvmlDeviceGetProcessUtilization(nvml::Device dev, nvml::ProcessUtilizationSample* out,
                                             unsigned* count, unsigned long long) {
  const json ps = device(dev).value("processes", json::array());
  unsigned sampled = 0;
  for (const auto& p : ps) sampled += p.contains("sm") ? 1 : 0;
  if (out == nullptr || *count < sampled) {
    *count = sampled;
    return sampled == 0 ? nvml::kErrorNotFound : nvml::kErrorInsufficientSize;
  }
  unsigned n = 0;
  for (const auto& p : ps) {
    if (!p.contains("sm")) continue;
    out[n] = nvml::ProcessUtilizationSample{};
    out[n].pid = p["pid"].get<unsigned>();
    out[n].smUtil = p["sm"].get<unsigned>();
    ++n;
  }
  *count = n;
  return nvml::kSuccess;
}

nvml::Return nvmlEventSetCreate(nvml::EventSet* set) {
  *set = reinterpret_cast<nvml::EventSet>(uintptr_t{0xe0});
  return nvml::kSuccess;
}

nvml::Return nvmlEventSetFree(nvml::EventSet) { return nvml::kSuccess; }

nvml::Return nvmlDeviceGetSupportedEventTypes(nvml::Device dev, unsigned long long* types) {
  *types = device(dev).value("supportedEvents", nvml::kEventXidCritical | nvml::kEventDoubleBitEcc);
  return nvml::kSuccess;
}

nvml::Return nvmlDeviceRegisterEvents(nvml::Device dev, unsigned long long, nvml::EventSet) {
  return device(dev).value("registerRc", 0);
}

nvml::Return nvmlEventSetWait_v2(nvml::EventSet, nvml::EventData* data, unsigned timeoutMs) {
  const char* path = std::getenv("FAKE_NVML_EVENTS");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  for (;;) {
    if (path) {
      std::ifstream in(path);
      std::string line;
      for (size_t i = 0; std::getline(in, line); ++i) {
        if (i < eventsRead) continue;
        ++eventsRead;
        if (line == "lost") return nvml::kErrorGpuIsLost;
        std::istringstream words(line);
        int index = -1;
        std::string type;
        unsigned long long value = 0;
        words >> index >> type >> value;
        *data = nvml::EventData{};
        data->device = index < 0 ? nullptr : handleOf(static_cast<unsigned>(index));
        data->eventType = type == "xid" ? nvml::kEventXidCritical : nvml::kEventDoubleBitEcc;
        data->eventData = type == "xid" ? value : 0;
        return nvml::kSuccess;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return nvml::kErrorTimeout;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // extern "C"
