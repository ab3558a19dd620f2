#include "gpu/nvml_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "gpu/nvml_abi.h"

namespace koord {
namespace {

// More processes than this on one GPU are not read (a bounded buffer per call).
constexpr unsigned kMaxProcesses = 1024;

struct Functions {
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn errorString = nullptr;
  nvml::SystemStringFn driverVersion = nullptr;
  nvml::CudaVersionFn cudaVersion = nullptr;  // optional
  nvml::CountFn count = nullptr;
  nvml::HandleFn handle = nullptr;
  nvml::DeviceStringFn uuid = nullptr;
  nvml::DeviceStringFn name = nullptr;
  nvml::DeviceUintFn minor = nullptr;
  nvml::MemoryFn memory = nullptr;
  nvml::PciFn pci = nullptr;
  nvml::UtilizationFn utilization = nullptr;
  nvml::ProcessesV2Fn processesV2 = nullptr;                // optional (R470 and later)
  nvml::ProcessesV1Fn processesV1 = nullptr;                // optional, older drivers
  nvml::ProcessUtilizationFn processUtilization = nullptr;  // optional
  // Critical-error events (all optional: without them no GPU is watched).
  nvml::EventSetCreateFn eventSetCreate = nullptr;
  nvml::EventSetFreeFn eventSetFree = nullptr;
  nvml::SupportedEventsFn supportedEvents = nullptr;
  nvml::RegisterEventsFn registerEvents = nullptr;
  nvml::EventSetWaitFn eventWait = nullptr;
};

std::string message(const Functions& f, nvml::Return rc) {
  const char* s = f.errorString ? f.errorString(rc) : nullptr;
  return (s ? std::string(s) : std::string("error")) + " (" + std::to_string(rc) + ")";
}

Error fail(const Functions& f, const std::string& call, nvml::Return rc) {
  return makeError("NVML " + call + ": " + message(f, rc));
}

// The events of the GPUs registered in one event set; read from one thread.
class NvmlEventWatch final : public GpuEventWatch {
 public:
  NvmlEventWatch(const Functions& f, nvml::EventSet set,
                 std::vector<std::pair<nvml::Device, std::string>> uuids)
      : f_(f), set_(set), uuids_(std::move(uuids)) {}
  ~NvmlEventWatch() override { f_.eventSetFree(set_); }

  Result<std::optional<GpuHealthEvent>> wait(unsigned timeoutMs) override {
    nvml::EventData data{};
    const auto rc = f_.eventWait(set_, &data, timeoutMs);
    if (rc == nvml::kErrorTimeout) return std::optional<GpuHealthEvent>();
    // A GPU fell off the bus; the driver does not say which.
    if (rc == nvml::kErrorGpuIsLost) {
      return std::optional<GpuHealthEvent>(GpuHealthEvent{"", 0, "GPU lost"});
    }
    if (rc != nvml::kSuccess) return fail(f_, "nvmlEventSetWait_v2", rc);
    GpuHealthEvent e;
    e.uuid = uuidOf(data.device);
    if (data.eventType & nvml::kEventXidCritical) {
      e.xid = data.eventData;
      e.what = "Xid " + std::to_string(e.xid);
    } else if (data.eventType & nvml::kEventDoubleBitEcc) {
      e.what = "double-bit ECC error";
    } else {
      return std::optional<GpuHealthEvent>();  // not a type we registered
    }
    return std::optional<GpuHealthEvent>(std::move(e));
  }

 private:
  // The GPU an event names, by the handles registered; "" when the driver names none.
  std::string uuidOf(nvml::Device dev) const {
    for (const auto& [handle, uuid] : uuids_) {
      if (handle == dev) return uuid;
    }
    return "";
  }

  Functions f_;
  nvml::EventSet set_;
  std::vector<std::pair<nvml::Device, std::string>> uuids_;
};

class NvmlLibrary final : public GpuLibrary {
 public:
  NvmlLibrary(void* handle, Functions f) : handle_(handle), f_(f) {}
  ~NvmlLibrary() override {
    f_.shutdown();
    ::dlclose(handle_);
  }

  Result<GpuSystemInfo> system() override {
    GpuSystemInfo info;
    char buf[nvml::kDriverVersionBuffer] = {};
    if (auto rc = f_.driverVersion(buf, sizeof buf); rc != nvml::kSuccess) {
      return fail("nvmlSystemGetDriverVersion", rc);
    }
    info.driverVersion = buf;
    int cuda = 0;
    if (f_.cudaVersion && f_.cudaVersion(&cuda) == nvml::kSuccess) {
      info.cudaVersion = cudaVersionString(cuda);
    }
    return info;
  }

  Result<std::vector<GpuDeviceInfo>> devices() override {
    unsigned n = 0;
    if (auto rc = f_.count(&n); rc != nvml::kSuccess) return fail("nvmlDeviceGetCount_v2", rc);
    std::vector<GpuDeviceInfo> out;
    for (unsigned i = 0; i < n; ++i) {
      GpuDeviceInfo d;
      d.index = i;
      nvml::Device dev = nullptr;
      if (auto rc = f_.handle(i, &dev); rc != nvml::kSuccess) {
        return fail("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + ")", rc);
      }
      char buf[nvml::kUuidBuffer] = {};
      if (auto rc = f_.uuid(dev, buf, sizeof buf); rc != nvml::kSuccess) {
        return fail("nvmlDeviceGetUUID(" + std::to_string(i) + ")", rc);
      }
      d.uuid = buf;
      if (auto rc = f_.minor(dev, &d.minor); rc != nvml::kSuccess) {
        return fail("nvmlDeviceGetMinorNumber(" + std::to_string(i) + ")", rc);
      }
      char name[nvml::kNameBuffer] = {};
      if (f_.name(dev, name, sizeof name) == nvml::kSuccess) d.model = name;
      nvml::PciInfo pci{};
      if (f_.pci(dev, &pci) == nvml::kSuccess) d.busId = sysfsBusId(pci.busId);
      nvml::Memory mem{};
      // A device whose memory cannot be read is unhealthy (the driver lost it, or it
      // fell off the bus); it is still listed, as the driver lists it.
      if (auto rc = f_.memory(dev, &mem); rc == nvml::kSuccess) {
        d.memoryTotal = mem.total;
      } else {
        d.healthy = false;
        d.unhealthyReason = "nvmlDeviceGetMemoryInfo: " + message(rc);
      }
      out.push_back(std::move(d));
    }
    return out;
  }

  Result<GpuDeviceUsage> usage(unsigned index, uint64_t sinceMicros) override {
    nvml::Device dev = nullptr;
    if (auto rc = f_.handle(index, &dev); rc != nvml::kSuccess) {
      return fail("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(index) + ")", rc);
    }
    GpuDeviceUsage u;
    nvml::Utilization util{};
    if (auto rc = f_.utilization(dev, &util); rc != nvml::kSuccess) {
      return fail("nvmlDeviceGetUtilizationRates(" + std::to_string(index) + ")", rc);
    }
    u.coreUtil = std::min(util.gpu, 100u);
    nvml::Memory mem{};
    if (auto rc = f_.memory(dev, &mem); rc != nvml::kSuccess) {
      return fail("nvmlDeviceGetMemoryInfo(" + std::to_string(index) + ")", rc);
    }
    u.memoryUsed = mem.used;
    u.memoryTotal = mem.total;
    if (auto st = readProcesses(dev, u.processes); !st) return st.error();
    readProcessCores(dev, sinceMicros, u.processes);
    return u;
  }

  Result<GpuWatchStart> watchHealth() override {
    if (!f_.eventSetCreate || !f_.eventSetFree || !f_.registerEvents || !f_.eventWait) {
      return makeError("NVML has no nvmlEventSetWait_v2 (a driver older than R450)");
    }
    unsigned n = 0;
    if (auto rc = f_.count(&n); rc != nvml::kSuccess) return fail("nvmlDeviceGetCount_v2", rc);
    nvml::EventSet set = nullptr;
    if (auto rc = f_.eventSetCreate(&set); rc != nvml::kSuccess) {
      return fail("nvmlEventSetCreate", rc);
    }
    GpuWatchStart start;
    std::vector<std::pair<nvml::Device, std::string>> watched;
    for (unsigned i = 0; i < n; ++i) {
      nvml::Device dev = nullptr;
      char buf[nvml::kUuidBuffer] = {};
      if (f_.handle(i, &dev) != nvml::kSuccess || f_.uuid(dev, buf, sizeof buf) != nvml::kSuccess) {
        continue;  // a GPU the driver cannot name now: its use says so each round
      }
      const std::string uuid = buf;
      // Xid events, and double-bit ECC errors where the GPU reports them apart.
      unsigned long long mask = nvml::kEventXidCritical | nvml::kEventDoubleBitEcc;
      unsigned long long supported = mask;
      if (f_.supportedEvents && f_.supportedEvents(dev, &supported) == nvml::kSuccess) {
        mask &= supported;
      }
      if (!(mask & nvml::kEventXidCritical)) {
        start.unwatched.push_back({uuid, "the GPU reports no Xid events", true});
        continue;
      }
      const auto rc = f_.registerEvents(dev, mask, set);
      if (rc == nvml::kSuccess) {
        watched.emplace_back(dev, uuid);
      } else {
        start.unwatched.push_back(
            {uuid, "nvmlDeviceRegisterEvents: " + message(rc), rc == nvml::kErrorNotSupported});
      }
    }
    start.watch = std::make_unique<NvmlEventWatch>(f_, set, std::move(watched));
    return start;
  }

 private:
  std::string message(nvml::Return rc) const { return koord::message(f_, rc); }
  Error fail(const std::string& call, nvml::Return rc) const { return koord::fail(f_, call, rc); }

  // Compute processes and their memory; a driver without the call lists none.
  Status readProcesses(nvml::Device dev, std::vector<GpuProcessUsage>& out) {
    auto read = [&](auto fn, auto* sample) -> Status {
      using Info = std::remove_pointer_t<decltype(sample)>;
      std::vector<Info> infos(64);
      for (int attempt = 0; attempt < 3; ++attempt) {
        unsigned n = static_cast<unsigned>(infos.size());
        const auto rc = fn(dev, &n, infos.data());
        if (rc == nvml::kSuccess) {
          for (unsigned i = 0; i < std::min<unsigned>(n, infos.size()); ++i) {
            out.push_back({static_cast<int>(infos[i].pid), infos[i].usedGpuMemory, std::nullopt});
          }
          return Ok{};
        }
        if (rc != nvml::kErrorInsufficientSize)
          return fail("nvmlDeviceGetComputeRunningProcesses", rc);
        infos.resize(std::min(kMaxProcesses, n + 16));  // more came meanwhile: a margin
      }
      return fail("nvmlDeviceGetComputeRunningProcesses", nvml::kErrorInsufficientSize);
    };
    if (f_.processesV2) return read(f_.processesV2, static_cast<nvml::ProcessInfoV2*>(nullptr));
    if (f_.processesV1) return read(f_.processesV1, static_cast<nvml::ProcessInfoV1*>(nullptr));
    return Ok{};
  }

  // Each process's share of the cores since `sinceMicros`, onto the processes read.
  // Not supported (older GPUs, vGPU) or no sample in the period: left unset.
  void readProcessCores(nvml::Device dev, uint64_t sinceMicros,
                        std::vector<GpuProcessUsage>& processes) {
    if (!f_.processUtilization || processes.empty()) return;
    unsigned n = 0;
    auto rc = f_.processUtilization(dev, nullptr, &n, sinceMicros);
    if (rc != nvml::kErrorInsufficientSize || n == 0) return;
    std::vector<nvml::ProcessUtilizationSample> samples(std::min(kMaxProcesses, n));
    n = static_cast<unsigned>(samples.size());
    if (f_.processUtilization(dev, samples.data(), &n, sinceMicros) != nvml::kSuccess) return;
    for (unsigned i = 0; i < std::min<unsigned>(n, samples.size()); ++i) {
      for (auto& p : processes) {
        if (p.pid == static_cast<int>(samples[i].pid)) {
          // Several samples for one pid in the period: the latest.
          p.smUtil = std::min(samples[i].smUtil, 100u);
        }
      }
    }
  }

  void* handle_;
  Functions f_;
};

template <typename Fn>
bool resolve(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(::dlsym(handle, name));
  return out != nullptr;
}

}  // namespace

std::string cudaVersionString(int version) {
  if (version <= 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string sysfsBusId(const std::string& nvmlBusId) {
  std::string id = nvmlBusId;
  // "00000000:3B:00.0": the domain has 8 digits in NVML and 4 in sysfs.
  if (const auto colon = id.find(':'); colon != std::string::npos && colon > 4) {
    id = id.substr(colon - 4);
  }
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return id;
}

Result<std::unique_ptr<GpuLibrary>> loadNvml(const std::string& path) {
  ::dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    // The loader's "cannot open shared object file: No such file or directory" said
    // the way an operator reads it (and not in words that read as the agent's own
    // libraries missing); anything else as the loader says it.
    const char* loader = ::dlerror();  // once: a second call returns nullptr
    const std::string why = loader != nullptr ? loader : "";
    if (why.empty() || why.find("No such file or directory") != std::string::npos) {
      return makeError("cannot load " + path +
                       ": not found (no NVIDIA driver library on this node, or not mounted into "
                       "the agent's container)");
    }
    return makeError("cannot load " + path + ": " + why);
  }
  Functions f;
  const char* missing = nullptr;
  auto need = [&](const char* name, auto& fn) {
    if (!resolve(handle, name, fn) && !missing) missing = name;
  };
  need("nvmlInit_v2", f.init);
  need("nvmlShutdown", f.shutdown);
  need("nvmlErrorString", f.errorString);
  need("nvmlSystemGetDriverVersion", f.driverVersion);
  need("nvmlDeviceGetCount_v2", f.count);
  need("nvmlDeviceGetHandleByIndex_v2", f.handle);
  need("nvmlDeviceGetUUID", f.uuid);
  need("nvmlDeviceGetName", f.name);
  need("nvmlDeviceGetMinorNumber", f.minor);
  need("nvmlDeviceGetMemoryInfo", f.memory);
  need("nvmlDeviceGetPciInfo_v3", f.pci);
  need("nvmlDeviceGetUtilizationRates", f.utilization);
  if (missing) {
    ::dlclose(handle);
    return makeError(path + " has no " + missing + " (a driver older than the agent reads)");
  }
  if (!resolve(handle, "nvmlSystemGetCudaDriverVersion_v2", f.cudaVersion)) {
    resolve(handle, "nvmlSystemGetCudaDriverVersion", f.cudaVersion);
  }
  resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v2", f.processesV2);
  if (!f.processesV2) resolve(handle, "nvmlDeviceGetComputeRunningProcesses", f.processesV1);
  resolve(handle, "nvmlDeviceGetProcessUtilization", f.processUtilization);
  resolve(handle, "nvmlEventSetCreate", f.eventSetCreate);
  resolve(handle, "nvmlEventSetFree", f.eventSetFree);
  resolve(handle, "nvmlDeviceGetSupportedEventTypes", f.supportedEvents);
  resolve(handle, "nvmlDeviceRegisterEvents", f.registerEvents);
  resolve(handle, "nvmlEventSetWait_v2", f.eventWait);
  if (const auto rc = f.init(); rc != nvml::kSuccess) {
    // NVML's message lives in the library: copied before it is unmapped.
    const std::string why = "nvmlInit_v2: " + message(f, rc);
    ::dlclose(handle);
    return makeError(why);
  }
  return std::unique_ptr<GpuLibrary>(new NvmlLibrary(handle, f));
}

}  // namespace koord
