// Process group construction and the collectives FSDP uses, over c10d. libtorch 1.13 (Debian, CPU) and
// 2.x (GPU machine) differ: 2.x process groups are c10d::Backend, and only NCCL builds have ProcessGroupNCCL;
// Gloo has no _allgather_base/_reduce_scatter_base in 1.13, so Gloo uses the list all-gather and
// all-reduce + slice for reduce-scatter everywhere.
#include "trainer/parallel/dist.h"

#include <ATen/ATen.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
// Gloo needs its own headers, which the pip wheel does not ship (the GPU image): NCCL only there.
#if __has_include(<gloo/algorithm.h>)
#define AIR_WITH_GLOO 1
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <thread>

#include "core/base/error.h"

#if TORCH_VERSION_MAJOR >= 2 && __has_include(<nccl.h>)
#define AIR_WITH_NCCL 1
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace air::train {
namespace {

#if TORCH_VERSION_MAJOR >= 2
using Group = c10d::Backend;
#else
using Group = c10d::ProcessGroup;
#endif

int env_int(const char* name, int fallback, int min) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long parsed = std::strtol(v, &end, 10);
  if (*end || parsed < min || parsed > (1 << 24))
    throw Error(std::string(name) + " must be an integer >= " + std::to_string(min) + ", got '" + v + "'",
                "air-torchrun sets it for each rank");
  return static_cast<int>(parsed);
}

// One process: collectives are copies, nothing to rendezvous with.
class SingleDist : public Dist {
 public:
  explicit SingleDist(DistEnv env) : Dist(std::move(env)) {}
  std::string backend_name() const override { return "none"; }
  Pending all_gather(at::Tensor out, at::Tensor shard) override {
    out.view(-1).copy_(shard.view(-1));
    return {};
  }
  Pending reduce_scatter(at::Tensor out_shard, at::Tensor full) override {
    out_shard.view(-1).copy_(full.view(-1));
    return {};
  }
  void all_reduce_sum(at::Tensor) override {}
  void broadcast(at::Tensor, int) override {}
  void barrier() override {}
};

class C10dDist : public Dist {
 public:
  C10dDist(DistEnv env, c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<Group> group, bool nccl)
      : Dist(std::move(env)), store_(std::move(store)), group_(std::move(group)), nccl_(nccl) {}

  ~C10dDist() override {
    // Rank 0 hosts the store: leaving before the others are done with it would fail their last calls.
    // Not while unwinding from an error, when the others may never arrive.
    if (std::uncaught_exceptions() > 0) return;
    try {
      barrier();
    } catch (...) {
    }
  }

  std::string backend_name() const override { return nccl_ ? "nccl" : "gloo"; }

  Pending all_gather(at::Tensor out, at::Tensor shard) override {
    std::vector<at::Tensor> inputs{shard.contiguous()};
    if (nccl_) {
      auto work = group_->_allgather_base(out, inputs[0]);
      return Pending([work] { work->wait(); });
    }
    std::vector<std::vector<at::Tensor>> outputs(1);
    auto flat = out.view(-1);
    int64_t n = inputs[0].numel();
    for (int r = 0; r < world_size(); ++r) outputs[0].push_back(flat.narrow(0, r * n, n));
    auto work = group_->allgather(outputs, inputs);
    return Pending([work, outputs, inputs] { work->wait(); });
  }

  Pending reduce_scatter(at::Tensor out_shard, at::Tensor full) override {
    if (nccl_) {
      auto input = full.contiguous();
      auto work = group_->_reduce_scatter_base(out_shard, input);
      return Pending([work, input] { work->wait(); });
    }
    std::vector<at::Tensor> tensors{full.contiguous().clone()};
    auto work = group_->allreduce(tensors);
    int64_t n = out_shard.numel();
    int64_t offset = rank() * n;
    return Pending([work, tensors, out_shard, offset, n]() mutable {
      work->wait();
      out_shard.view(-1).copy_(tensors[0].view(-1).narrow(0, offset, n));
    });
  }

  void all_reduce_sum(at::Tensor t) override {
    std::vector<at::Tensor> tensors{t};
    group_->allreduce(tensors)->wait();
  }

  void broadcast(at::Tensor t, int root) override {
    std::vector<at::Tensor> tensors{t};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    group_->broadcast(tensors, options)->wait();
  }

  void barrier() override {
    // A small all-reduce is a barrier on every backend and needs no device bookkeeping.
    auto t = at::zeros({1}, nccl_ ? at::TensorOptions().device(at::kCUDA, local_rank()) : at::TensorOptions());
    all_reduce_sum(t);
    if (nccl_) t.item<float>();
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<Group> group_;
  bool nccl_;
};

std::string endpoint(const DistEnv& env) { return env.master_addr + ":" + std::to_string(env.master_port); }

// Every rank announces itself; all wait until the count reaches the world size, so a timeout can say
// exactly which ranks never arrived.
c10::intrusive_ptr<c10d::Store> rendezvous(const DistEnv& env, std::chrono::seconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env.master_port);
  options.isServer = env.rank == 0;
  options.waitWorkers = false;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
  } catch (const std::exception& e) {
    if (env.rank == 0)
      throw Error("rank 0 cannot host the rendezvous store on " + endpoint(env) + ": " +
                      std::string(e.what()).substr(0, 200),
                  "is the port in use? pick another with --master_port");
    throw Error("rank " + std::to_string(env.rank) + " could not reach the rendezvous store at " +
                    endpoint(env) + " within " + std::to_string(timeout.count()) + " s",
                "rank 0 hosts it: check that node 0 started and that MASTER_ADDR is reachable from here");
  }
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  std::string me = std::string(host) + " pid " + std::to_string(getpid());
  store->set("air/rank/" + std::to_string(env.rank), std::vector<uint8_t>(me.begin(), me.end()));
  store->add("air/joined", 1);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (store->add("air/joined", 0) < env.world_size) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string missing;
      int joined = 0;
      for (int r = 0; r < env.world_size; ++r) {
        if (store->check({"air/rank/" + std::to_string(r)})) {
          ++joined;
        } else {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      throw Error("rendezvous at " + endpoint(env) + " timed out after " + std::to_string(timeout.count()) +
                      " s: " + std::to_string(joined) + " of " + std::to_string(env.world_size) +
                      " ranks joined; missing rank(s) " + missing,
                  "every node must run air-torchrun with the same --nnodes, --nproc_per_node, "
                  "--master_addr and --master_port");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return store;
}

[[maybe_unused]] bool is_loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

}  // namespace

bool world1_collectives() {
  const char* force = std::getenv("AIR_TRAIN_WORLD1_NCCL");
  return force && std::string(force) == "1";
}

DistBackend engine_backend(const c10::Device& device) {
  const bool world1 = dist_env_from_environment().world_size == 1;
  if (world1 && !world1_collectives()) return DistBackend::kGloo;
  return device.is_cuda() ? DistBackend::kNccl : DistBackend::kGloo;
}

DistEnv dist_env_from_environment() {
  DistEnv env;
  env.world_size = env_int("WORLD_SIZE", 1, 1);
  env.rank = env_int("RANK", 0, 0);
  env.local_rank = env_int("LOCAL_RANK", env.rank, 0);
  env.local_world_size = env_int("LOCAL_WORLD_SIZE", env.world_size, 1);
  env.master_port = env_int("MASTER_PORT", 29500, 1);
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) env.master_addr = addr;
  if (env.rank >= env.world_size)
    throw Error("RANK " + std::to_string(env.rank) + " is not below WORLD_SIZE " + std::to_string(env.world_size),
                "start ranks with air-torchrun");
  if (env.local_rank >= env.local_world_size)
    throw Error("LOCAL_RANK " + std::to_string(env.local_rank) + " is not below LOCAL_WORLD_SIZE " +
                std::to_string(env.local_world_size));
  return env;
}

std::unique_ptr<Dist> Dist::init(const DistEnv& env, DistBackend backend, std::chrono::seconds timeout) {
  bool nccl = false;
#ifdef AIR_WITH_NCCL
  nccl = backend == DistBackend::kNccl || (backend == DistBackend::kAuto && c10::cuda::device_count() > 0);
#else
  if (backend == DistBackend::kNccl)
    throw Error("this air-train was built without NCCL", "build against a CUDA libtorch 2.x, or use Gloo on CPU");
#endif
  if (env.world_size == 1 && backend != DistBackend::kNccl) return std::make_unique<SingleDist>(env);
  auto store = rendezvous(env, timeout);
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("air/pg", store);
  c10::intrusive_ptr<Group> group;
#ifdef AIR_WITH_NCCL
  if (nccl) {
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.local_rank));
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
    group = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, env.rank, env.world_size, options);
  }
#endif
#ifndef AIR_WITH_GLOO
  if (!nccl) throw Error("this air-train was built without Gloo (no gloo headers)", "use NCCL on GPUs");
#else
  if (!nccl) {
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
    const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
    if (iface && *iface) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(iface));
    } else if (is_loopback(env.master_addr)) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    options->threads = 2;
    group = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, env.rank, env.world_size, options);
  }
#endif
  return std::make_unique<C10dDist>(env, store, group, nccl);
}

}  // namespace air::train
