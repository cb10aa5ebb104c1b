// NVML through dlopen(): only the handful of entry points the system metrics need, declared here with
// NVML's C ABI (nvml.h is not needed to build).
#include "core/health/nvml.h"

#include <dlfcn.h>

#include <cstdlib>

namespace air::health {

namespace {

using nvmlReturn = int;  // NVML_SUCCESS is 0
using nvmlDevice = void*;
struct nvmlUtilization {
  unsigned int gpu, memory;
};
struct nvmlMemory {
  unsigned long long total, free, used;
};

}  // namespace

struct Nvml::Api {
  void* handle = nullptr;
  nvmlReturn (*init)() = nullptr;
  nvmlReturn (*shutdown)() = nullptr;
  nvmlReturn (*count)(unsigned int*) = nullptr;
  nvmlReturn (*by_index)(unsigned int, nvmlDevice*) = nullptr;
  // The out-structs as void*: the library's functions are C, and a pointer to a function taking a pointer to
  // this file's own struct types is not their type (UBSan's -fsanitize=function says so through the test's fake).
  nvmlReturn (*utilization)(nvmlDevice, void*) = nullptr;  // nvmlUtilization*
  nvmlReturn (*memory)(nvmlDevice, void*) = nullptr;       // nvmlMemory*
  nvmlReturn (*power)(nvmlDevice, unsigned int*) = nullptr;  // milliwatts; optional
  ~Api() {
    if (shutdown) shutdown();
    if (handle) dlclose(handle);
  }
};

namespace {

template <class F>
bool bind(void* h, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(h, name));
  return f != nullptr;
}

}  // namespace

std::unique_ptr<Nvml> Nvml::load(const std::string& library, std::string* why) {
  std::string lib = library;
  if (lib.empty()) {
    const char* env = std::getenv("AIR_NVML_LIBRARY");
    lib = env && *env ? env : "libnvidia-ml.so.1";
  }
  auto api = std::make_unique<Api>();
  api->handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->handle) {
    if (why) *why = "cannot load " + lib + ": " + dlerror();
    return nullptr;
  }
  // The _v2 names are those current drivers export; the plain ones are their older aliases.
  bool ok = (bind(api->handle, "nvmlInit_v2", api->init) || bind(api->handle, "nvmlInit", api->init)) &&
            bind(api->handle, "nvmlShutdown", api->shutdown) &&
            (bind(api->handle, "nvmlDeviceGetCount_v2", api->count) ||
             bind(api->handle, "nvmlDeviceGetCount", api->count)) &&
            (bind(api->handle, "nvmlDeviceGetHandleByIndex_v2", api->by_index) ||
             bind(api->handle, "nvmlDeviceGetHandleByIndex", api->by_index)) &&
            bind(api->handle, "nvmlDeviceGetUtilizationRates", api->utilization) &&
            bind(api->handle, "nvmlDeviceGetMemoryInfo", api->memory);
  bind(api->handle, "nvmlDeviceGetPowerUsage", api->power);
  if (!ok) {
    api->shutdown = nullptr;  // never initialised
    if (why) *why = lib + " lacks an NVML function the system metrics need";
    return nullptr;
  }
  if (nvmlReturn rc = api->init(); rc != 0) {
    api->shutdown = nullptr;
    if (why) *why = "nvmlInit failed with code " + std::to_string(rc);
    return nullptr;
  }
  return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}
Nvml::~Nvml() = default;

int Nvml::device_count() const {
  unsigned int n = 0;
  return api_->count(&n) == 0 ? static_cast<int>(n) : 0;
}

std::optional<GpuReading> Nvml::read(int index) const {
  nvmlDevice dev = nullptr;
  if (index < 0 || api_->by_index(static_cast<unsigned int>(index), &dev) != 0) return std::nullopt;
  nvmlUtilization u{};
  nvmlMemory m{};
  if (api_->utilization(dev, &u) != 0 || api_->memory(dev, &m) != 0) return std::nullopt;
  GpuReading r;
  r.utilization_percent = u.gpu;
  r.memory_utilization_percent = u.memory;
  r.memory_used_megabytes = static_cast<double>(m.used) / 1e6;
  r.memory_total_megabytes = static_cast<double>(m.total) / 1e6;
  unsigned int mw = 0;
  if (api_->power && api_->power(dev, &mw) == 0) r.power_watts = mw / 1000.0;
  return r;
}

std::vector<int> visible_gpu_indices(const std::string& cuda_visible_devices, int device_count) {
  std::vector<int> all;
  for (int i = 0; i < device_count; ++i) all.push_back(i);
  if (cuda_visible_devices.empty()) return all;
  std::vector<int> out;
  size_t start = 0;
  while (start <= cuda_visible_devices.size()) {
    size_t comma = cuda_visible_devices.find(',', start);
    std::string w = cuda_visible_devices.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    long v = std::strtol(w.c_str(), &end, 10);
    if (w.empty() || !end || *end != '\0' || v < 0) return all;  // a UUID or MIG name: every device
    if (v < device_count) out.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool gpu_working(const GpuReading& g, double busy_percent) {
  const bool spinning = g.utilization_percent >= kSpinUtilPercent && g.memory_utilization_percent < kSpinMemoryPercent;
  return g.utilization_percent >= busy_percent && !spinning;
}

}  // namespace air::health
