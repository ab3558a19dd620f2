// The part of NVML's C ABI the agent calls (libnvidia-ml.so.1, loaded at run time:
// gpu/nvml_library.cpp). Declared here from NVML's documented interface so that the
// agent builds without the driver's headers; only what is read is declared, with
// the layouts NVML has kept stable since the R450 drivers.
#pragma once

namespace koord::nvml {

using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorInsufficientSize = 7;
constexpr Return kErrorNotFound = 6;
constexpr Return kErrorTimeout = 10;
constexpr Return kErrorGpuIsLost = 15;

using Device = void*;    // nvmlDevice_t, an opaque handle
using EventSet = void*;  // nvmlEventSet_t, an opaque handle

// Event types (nvmlEventType*), a mask.
constexpr unsigned long long kEventDoubleBitEcc = 0x2;
constexpr unsigned long long kEventXidCritical = 0x8;

// Buffer sizes NVML documents for its string getters (the _V2 sizes, the largest).
constexpr unsigned kUuidBuffer = 96;
constexpr unsigned kNameBuffer = 96;
constexpr unsigned kDriverVersionBuffer = 80;

struct Memory {  // nvmlMemory_t, bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct Utilization {  // nvmlUtilization_t, percent over the driver's last sample period
  unsigned int gpu;
  unsigned int memory;
};

struct PciInfo {  // nvmlPciInfo_t (the _v3 getter's layout)
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];  // "0000:3B:00.0" (domain:bus:device.function, hex, upper case)
};

struct ProcessInfoV1 {  // nvmlProcessInfo_v1_t
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes
};

struct ProcessInfoV2 {  // nvmlProcessInfo_v2_t
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct ProcessUtilizationSample {  // nvmlProcessUtilizationSample_t
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp, microseconds
  unsigned int smUtil;           // percent
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

struct EventData {  // nvmlEventData_t
  Device device;
  unsigned long long eventType;
  unsigned long long eventData;  // the Xid of an Xid event (999: an Xid the driver does not know)
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// The functions, by their exported names.
using InitFn = Return (*)();                             // nvmlInit_v2
using ShutdownFn = Return (*)();                         // nvmlShutdown
using ErrorStringFn = const char* (*)(Return);           // nvmlErrorString
using SystemStringFn = Return (*)(char*, unsigned int);  // nvmlSystemGetDriverVersion
using CudaVersionFn = Return (*)(int*);                  // nvmlSystemGetCudaDriverVersion_v2
using CountFn = Return (*)(unsigned int*);               // nvmlDeviceGetCount_v2
using HandleFn = Return (*)(unsigned int, Device*);      // nvmlDeviceGetHandleByIndex_v2
using DeviceStringFn = Return (*)(Device, char*, unsigned int);  // GetUUID, GetName
using DeviceUintFn = Return (*)(Device, unsigned int*);          // GetMinorNumber
using MemoryFn = Return (*)(Device, Memory*);                    // nvmlDeviceGetMemoryInfo
using PciFn = Return (*)(Device, PciInfo*);                      // nvmlDeviceGetPciInfo_v3
using UtilizationFn = Return (*)(Device, Utilization*);          // GetUtilizationRates
using ProcessesV2Fn = Return (*)(Device, unsigned int*, ProcessInfoV2*);
using ProcessesV1Fn = Return (*)(Device, unsigned int*, ProcessInfoV1*);
using ProcessUtilizationFn = Return (*)(Device, ProcessUtilizationSample*, unsigned int*,
                                        unsigned long long);
using EventSetCreateFn = Return (*)(EventSet*);                     // nvmlEventSetCreate
using EventSetFreeFn = Return (*)(EventSet);                        // nvmlEventSetFree
using SupportedEventsFn = Return (*)(Device, unsigned long long*);  // GetSupportedEventTypes
using RegisterEventsFn = Return (*)(Device, unsigned long long, EventSet);  // RegisterEvents
using EventSetWaitFn = Return (*)(EventSet, EventData*, unsigned int);      // nvmlEventSetWait_v2

}  // namespace koord::nvml
