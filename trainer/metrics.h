// Per-step training metrics: the readable line of the log a person watches (rank 0's stdout, once per logged
// step; the straggler alert's default step pattern reads its `step N/M` start) and the JSON line for machines
// (`metrics_file`; MLflow gets the same figures through its API).
// MFU counts model FLOPs 6N + 12*L*H*T per token (T = the padded row length) against 989 TFLOP/s dense
// bf16, the H100/H200 datasheet figure, so numbers compare with the reference baseline's.
#pragma once
#include <cstdint>
#include <string>

#include <ATen/ATen.h>

namespace air::train {

constexpr double kPeakFlops = 989e12;

struct StepMetrics {
  int64_t step = 0, max_steps = 0, epoch = 0;
  double loss = 0, lr = 0, grad_norm = 0;
  double step_seconds = 0;
  int64_t padded_tokens = 0, real_tokens = 0, target_tokens = 0;  // this step, all ranks
  double flops_per_token = 0;  // 6N + 12*L*H*T
  int64_t world_size = 1;
  double peak_memory_gib = -1;  // this rank's peak allocated GPU memory; < 0 on CPU

  double padded_tokens_per_s() const { return step_seconds > 0 ? padded_tokens / step_seconds : 0; }
  double real_tokens_per_s() const { return step_seconds > 0 ? real_tokens / step_seconds : 0; }
  // Per GPU: the whole job's model FLOP rate divided by world size and the peak.
  double mfu() const { return flops_per_token * padded_tokens_per_s() / (kPeakFlops * world_size); }
};

std::string human_line(const StepMetrics& m);
std::string json_line(const StepMetrics& m);

// This process's peak allocated memory on `device` in GiB since the last reset (-1 on CPU).
double peak_memory_gib(const at::Device& device);
void reset_peak_memory(const at::Device& device);
// Waits for the device's queued work (for honest timings).
void synchronize(const at::Device& device);
// Bytes a new allocation on `device` could still get: the driver's free memory plus what torch's caching
// allocator holds unused. -1 where unknown (CPU).
int64_t free_device_memory(const at::Device& device);

}  // namespace air::train
