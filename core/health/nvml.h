// The node's GPUs through NVML, loaded at run time with dlopen() (no build dependency on CUDA): on a
// machine without libnvidia-ml.so.1 there are simply no GPU metrics. AIR_NVML_LIBRARY names another
// library (tests load a fake one that exports the same few functions).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace air::health {

struct GpuReading {
  double utilization_percent = 0;  // share of the last sample period a kernel ran (NVML's "gpu" rate)
  double memory_used_megabytes = 0;  // 10^6 bytes, as MLflow reports it
  double memory_total_megabytes = 0;
  std::optional<double> power_watts;  // absent where the board does not report power
};

class Nvml {
 public:
  // Loads and initialises NVML (`library`, else $AIR_NVML_LIBRARY, else libnvidia-ml.so.1); nullptr when it
  // cannot be loaded or initialised, with the reason in *why (when given).
  static std::unique_ptr<Nvml> load(const std::string& library = {}, std::string* why = nullptr);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  int device_count() const;
  // One GPU by NVML index; nullopt when NVML cannot read it now.
  std::optional<GpuReading> read(int index) const;

 private:
  struct Api;
  explicit Nvml(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

// The NVML indices of a node's GPUs from CUDA_VISIBLE_DEVICES ("0,1", as the local backend hands them
// out): every device when the list is empty or names GPUs otherwise than by index (UUIDs).
std::vector<int> visible_gpu_indices(const std::string& cuda_visible_devices, int device_count);

}  // namespace air::health
