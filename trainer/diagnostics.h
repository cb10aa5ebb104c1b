// Diagnostics a benchmark asks for through the environment, off by default:
//   AIR_TRAIN_TRACE=FILE       a profiler trace (Chrome trace JSON: CPU ops, GPU kernels, memcpys, streams)
//                              of one optimizer step, AIR_TRAIN_TRACE_STEP (default 5), written by rank 0;
//                              bench/fsdp_trace.py reads it (which kernels overlap which).
//   AIR_TRAIN_DUMP_BATCHES=FILE every micro-batch rank 0 trains on, in order, so another trainer can train on
//                              exactly the same rows (bench/loss_curve.py). Format, little-endian int64:
//                              per micro-batch a header [step, B, T], then input_ids [B*T], then targets
//                              [B*T] (-100 where no loss is taken).
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>

#include "trainer/batches.h"

namespace air::train {

class StepTracer {
 public:
  StepTracer(int rank, std::ostream& log);
  ~StepTracer();
  void begin(int64_t step);  // starts tracing when step is the traced one
  void end(int64_t step);    // after the step's work has finished on the device: stops and writes the file

 private:
  std::string path_;
  int64_t step_ = 0;
  bool active_ = false;
  std::ostream& log_;
};

class BatchDump {
 public:
  explicit BatchDump(int rank);
  void write(int64_t step, const MicroBatch& mb);

 private:
  std::ofstream out_;
};

}  // namespace air::train
