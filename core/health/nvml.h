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
  double memory_utilization_percent = 0;  // share of it device memory was read or written (NVML's "memory" rate)
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

// Whether a GPU is doing work, for the stall watchdog: a kernel ran for at least `busy_percent` of the
// period, and the GPU is not spinning. Spinning: one kernel running all the time (utilisation >=
// kSpinUtilPercent) that touches no device memory (memory rate < kSpinMemoryPercent) - NCCL's collectives
// while a peer is gone or hung, which read 100% utilisation for as long as they wait - so a rank hung in a
// collective counts as idle and the watchdog can end the attempt. Measured on an H200 (torch.cuda._sleep as the
// spinning kernel): idle 0% / 0% memory, an 8192 bf16 matmul loop 99% / 23%, spinning 100% / 0%, a loop of
// small (512) matmuls 20% / 0% - small work stays work because it is launch-bound, never 100%.
inline constexpr double kSpinUtilPercent = 95.0;
inline constexpr double kSpinMemoryPercent = 1.0;
bool gpu_working(const GpuReading& g, double busy_percent);

// The NVML indices of a node's GPUs from CUDA_VISIBLE_DEVICES ("0,1", as the local backend hands them
// out): every device when the list is empty or names GPUs otherwise than by index (UUIDs).
std::vector<int> visible_gpu_indices(const std::string& cuda_visible_devices, int device_count);

}  // namespace air::health
