// The process group from the environment (RANK, WORLD_SIZE, MASTER_ADDR, ... as set by air-torchrun):
// a c10d TCPStore rendezvous, then NCCL on GPUs or Gloo on CPU, behind the few collectives FSDP needs.
// c10d headers stay in dist.cc so the rest of the trainer compiles without them.
#pragma once
#include <ATen/core/Tensor.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace air::train {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

// Reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; a single process when
// RANK and WORLD_SIZE are unset. Throws air::Error on malformed or inconsistent values.
DistEnv dist_env_from_environment();

enum class DistBackend { kAuto, kGloo, kNccl };

// AIR_TRAIN_WORLD1_NCCL=1: at world 1, run the gathers and reduce-scatters anyway, over a real NCCL group on a
// GPU, so that a profiler trace on one GPU shows the communication several GPUs overlap with compute.
bool world1_collectives();
// The training engines' backend: NCCL on GPUs, Gloo on CPUs; one process needs no process group at all
// (collectives are skipped: kGloo, never joined) unless world1_collectives() asks for them.
DistBackend engine_backend(const c10::Device& device);

// A collective in flight. wait() makes its result usable: on NCCL it only orders the current CUDA
// stream after the collective (no host synchronisation); on Gloo it blocks until the data is there.
class Pending {
 public:
  Pending() = default;
  explicit Pending(std::function<void()> wait) : wait_(std::move(wait)) {}
  void wait() {
    if (wait_) std::exchange(wait_, nullptr)();
  }
  bool done() const { return !wait_; }

 private:
  std::function<void()> wait_;
};

class Dist {
 public:
  virtual ~Dist() = default;

  // Joins the group. kAuto picks NCCL when the build has it and CUDA is available, else Gloo. A world of
  // one needs no rendezvous. A rendezvous that times out throws air::Error naming the missing ranks.
  static std::unique_ptr<Dist> init(const DistEnv& env, DistBackend backend = DistBackend::kAuto,
                                    std::chrono::seconds timeout = std::chrono::seconds(300));

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  int local_rank() const { return env_.local_rank; }
  const DistEnv& env() const { return env_; }
  virtual std::string backend_name() const = 0;

  // out (world * shard.numel() elements, contiguous) <- every rank's shard, in rank order.
  virtual Pending all_gather(at::Tensor out, at::Tensor shard) = 0;
  // out_shard <- this rank's slice of the element-wise sum of every rank's `full` (world * shard numel).
  virtual Pending reduce_scatter(at::Tensor out_shard, at::Tensor full) = 0;
  virtual void all_reduce_sum(at::Tensor t) = 0;
  virtual void broadcast(at::Tensor t, int root) = 0;
  virtual void barrier() = 0;

 protected:
  explicit Dist(DistEnv env) : env_(std::move(env)) {}
  DistEnv env_;
};

}  // namespace air::train
