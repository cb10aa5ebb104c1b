// Formatting of the step lines, and GPU memory/synchronisation helpers (CUDA builds only).
#include "trainer/metrics.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#ifdef AIR_TRAIN_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

namespace air::train {

std::string human_line(const StepMetrics& m) {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf,
                        "step %lld/%lld | loss %.4f | lr %.3e | grad_norm %.3f | %.1f ms | tok/s %.0f padded, %.0f real"
                        " | MFU %.1f%%",
                        static_cast<long long>(m.step), static_cast<long long>(m.max_steps), m.loss, m.lr, m.grad_norm,
                        m.step_seconds * 1e3, m.padded_tokens_per_s(), m.real_tokens_per_s(), m.mfu() * 100);
  std::string out(buf, static_cast<size_t>(n));
  if (m.peak_memory_gib >= 0) {
    std::snprintf(buf, sizeof buf, " | peak %.1f GiB", m.peak_memory_gib);
    out += buf;
  }
  return out;
}

std::string json_line(const StepMetrics& m) {
  nlohmann::ordered_json j = {{"step", m.step},
                              {"epoch", m.epoch},
                              {"loss", m.loss},
                              {"lr", m.lr},
                              {"grad_norm", m.grad_norm},
                              {"step_time_s", m.step_seconds},
                              {"padded_tokens", m.padded_tokens},
                              {"real_tokens", m.real_tokens},
                              {"target_tokens", m.target_tokens},
                              {"tokens_per_s_padded", m.padded_tokens_per_s()},
                              {"tokens_per_s_real", m.real_tokens_per_s()},
                              {"mfu", m.mfu()},
                              {"world_size", m.world_size}};
  if (m.peak_memory_gib >= 0) j["peak_memory_gib"] = m.peak_memory_gib;
  return j.dump();
}

double peak_memory_gib(const at::Device& device) {
#ifdef AIR_TRAIN_CUDA
  if (device.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return static_cast<double>(stats.allocated_bytes[0].peak) / static_cast<double>(1ull << 30);
  }
#endif
  return -1;
}

void reset_peak_memory(const at::Device& device) {
#ifdef AIR_TRAIN_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
#endif
}

int64_t free_device_memory(const at::Device& device) {
#ifdef AIR_TRAIN_CUDA
  if (device.is_cuda()) {
    c10::cuda::device_synchronize();
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return -1;
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    const int64_t cached = stats.reserved_bytes[0].current - stats.allocated_bytes[0].current;
    return static_cast<int64_t>(free) + cached;
  }
#endif
  (void)device;
  return -1;
}

void synchronize(const at::Device& device) {
#ifdef AIR_TRAIN_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#endif
}

}  // namespace air::train
