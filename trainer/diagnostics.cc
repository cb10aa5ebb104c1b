#include "trainer/diagnostics.h"

#include <cstdlib>
#include <set>
#include <vector>

#include <torch/version.h>

#include "core/base/error.h"

// The Kineto profiler's C++ API as libtorch 2.x has it (CPU and CUDA activities, Chrome trace export).
#if TORCH_VERSION_MAJOR >= 2 && __has_include(<torch/csrc/autograd/profiler_kineto.h>)
#include <torch/csrc/autograd/profiler_kineto.h>
#define AIR_TRAIN_HAVE_KINETO 1
#else
#define AIR_TRAIN_HAVE_KINETO 0
#endif

namespace air::train {
namespace {

std::string env_string(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

StepTracer::StepTracer(int rank, std::ostream& log) : log_(log) {
  if (rank != 0) return;
  path_ = env_string("AIR_TRAIN_TRACE");
  if (path_.empty()) return;
  std::string step = env_string("AIR_TRAIN_TRACE_STEP");
  try {
    step_ = step.empty() ? 5 : std::stoll(step);
  } catch (...) {
    throw usage_error("AIR_TRAIN_TRACE_STEP='" + step + "' is not an integer");
  }
  if (!AIR_TRAIN_HAVE_KINETO) {
    log_ << "trace: AIR_TRAIN_TRACE needs a libtorch 2 build with the Kineto profiler; no trace written\n";
    path_.clear();
  }
}

StepTracer::~StepTracer() {
#if AIR_TRAIN_HAVE_KINETO
  if (active_) torch::autograd::profiler::disableProfiler();
#endif
}

void StepTracer::begin(int64_t step) {
  if (path_.empty() || step != step_) return;
#if AIR_TRAIN_HAVE_KINETO
  using torch::profiler::impl::ActivityType;
  torch::profiler::impl::ProfilerConfig cfg(torch::profiler::impl::ProfilerState::KINETO);
  std::set<ActivityType> what{ActivityType::CPU};
#ifdef AIR_TRAIN_CUDA
  what.insert(ActivityType::CUDA);
#endif
  torch::autograd::profiler::prepareProfiler(cfg, what);
  torch::autograd::profiler::enableProfiler(cfg, what);
  active_ = true;
#endif
}

void StepTracer::end(int64_t step) {
  if (!active_ || step != step_) return;
#if AIR_TRAIN_HAVE_KINETO
  auto result = torch::autograd::profiler::disableProfiler();
  active_ = false;
  result->save(path_);
  log_ << "trace: step " << step << " written to " << path_ << " (" << result->events().size() << " events)\n";
#endif
}

BatchDump::BatchDump(int rank) {
  std::string path = env_string("AIR_TRAIN_DUMP_BATCHES");
  if (rank != 0 || path.empty()) return;
  out_.open(path, std::ios::binary | std::ios::trunc);
  if (!out_) throw Error("AIR_TRAIN_DUMP_BATCHES: cannot write " + path);
}

void BatchDump::write(int64_t step, const MicroBatch& mb) {
  if (!out_.is_open()) return;
  at::Tensor ids = mb.input_ids.to(at::kCPU, at::kLong).contiguous();
  at::Tensor tg = mb.targets.to(at::kCPU, at::kLong).contiguous();
  const int64_t head[3] = {step, ids.size(0), ids.size(1)};
  out_.write(reinterpret_cast<const char*>(head), sizeof head);
  out_.write(reinterpret_cast<const char*>(ids.data_ptr<int64_t>()), static_cast<std::streamsize>(ids.numel() * 8));
  out_.write(reinterpret_cast<const char*>(tg.data_ptr<int64_t>()), static_cast<std::streamsize>(tg.numel() * 8));
  out_.flush();
  if (!out_) throw Error("AIR_TRAIN_DUMP_BATCHES: write failed (disk full?)");
}

}  // namespace air::train
