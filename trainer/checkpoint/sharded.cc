// Sharded checkpoints: per-rank safetensors files of flat shards + a JSON state from rank 0; `latest` is
// the commit point. Resharding to another world size works because a unit's flat layout does not depend
// on the world size (only its padding does).
#include "trainer/checkpoint/sharded.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/base/error.h"
#include "trainer/parallel/fsdp.h"
#include "trainer/checkpoint/safetensors.h"

namespace air::train {
namespace fs = std::filesystem;
namespace {

std::string step_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

std::string rank_file(int rank, int world) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "rank-%05d-of-%05d.safetensors", rank, world);
  return buf;
}

void write_text_atomically(const fs::path& path, const std::string& text) {
  fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw Error("cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every rank's unit list must agree with the checkpoint's, or the shards would land in the wrong places.
void check_units(Fsdp& fsdp, const nlohmann::json& units, const fs::path& where) {
  auto& ours = fsdp.units();
  if (units.size() != ours.size())
    throw Error(where.string() + " has " + std::to_string(units.size()) + " FSDP units, this model " +
                    std::to_string(ours.size()),
                "the checkpoint was written for another model; point to another directory or remove it");
  for (size_t i = 0; i < ours.size(); ++i) {
    if (units[i]["name"] != ours[i]->name || units[i]["numel"].get<int64_t>() != ours[i]->numel)
      throw Error(where.string() + ": unit " + std::to_string(i) + " is '" + units[i]["name"].get<std::string>() +
                      "' with " + std::to_string(units[i]["numel"].get<int64_t>()) + " elements, this model has '" +
                      ours[i]->name + "' with " + std::to_string(ours[i]->numel),
                  "the checkpoint was written for another model; point to another directory or remove it");
  }
}

// This rank's slice [offset, offset + n) of a unit's flat layout, read from the old ranks' files.
at::Tensor read_slice(const std::vector<std::shared_ptr<SafetensorsFile>>& files, const std::string& key,
                      int64_t old_shard, int64_t offset, int64_t n) {
  std::vector<at::Tensor> parts;
  int64_t end = offset + n;
  for (int64_t pos = offset; pos < end;) {
    int64_t r = pos / old_shard, in = pos % old_shard;
    int64_t take = std::min(end - pos, old_shard - in);
    if (r >= static_cast<int64_t>(files.size())) {  // beyond the old padding: zeros
      parts.push_back(at::zeros({end - pos}, at::kFloat));
      break;
    }
    parts.push_back(files[r]->get(key).to(at::kFloat).narrow(0, in, take));
    pos += take;
  }
  return at::cat(parts);
}

// Removes step folders that are neither the newest `keep` complete checkpoints (those with state.json)
// nor the one just written; half-written folders of a crashed save go too. Rank 0 only, after the barrier.
void prune(const fs::path& dir, int64_t current, int keep) {
  std::vector<std::pair<int64_t, fs::path>> complete;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("step-", 0) != 0) continue;
    int64_t step = -1;
    try {
      step = std::stoll(name.substr(5));
    } catch (...) {
      continue;
    }
    if (step == current) continue;
    if (fs::exists(e.path() / "state.json")) complete.emplace_back(step, e.path());
    else fs::remove_all(e.path(), ec);
  }
  std::sort(complete.begin(), complete.end());
  // The current checkpoint counts as one of the `keep`.
  for (size_t i = 0; i + static_cast<size_t>(keep - 1) < complete.size(); ++i) fs::remove_all(complete[i].second, ec);
}

// Every rank must see the same answer, or ranks would start from different steps (a checkpoint_dir that is
// not on storage every node sees). Sum of "found" flags over the ranks: 0 or world.
void check_agreement(Fsdp& fsdp, bool found, const std::string& dir) {
  Dist& dist = fsdp.dist();
  if (dist.world_size() == 1) return;
  at::Tensor flag = at::full({1}, found ? 1.0f : 0.0f, at::TensorOptions().device(fsdp.config().device));
  dist.all_reduce_sum(flag);
  const int64_t n = static_cast<int64_t>(flag.item<float>() + 0.5f);
  if (n != 0 && n != dist.world_size())
    throw Error(std::to_string(n) + " of " + std::to_string(dist.world_size()) + " ranks see a sharded checkpoint in " +
                    dir + " (this rank " + (found ? "does" : "does not") + ")",
                "checkpoint_dir must be on storage every node sees (use an absolute path on a shared file system)");
}

}  // namespace

void save_sharded_checkpoint(Fsdp& fsdp, const std::string& dir, const LoopState& loop, int keep) {
  Dist& dist = fsdp.dist();
  fs::path step_dir = fs::path(dir) / step_name(loop.step);
  fs::create_directories(step_dir);
  fsdp.finish_backward();
  NamedTensors tensors;
  for (auto& u : fsdp.units()) {
    tensors.emplace_back("unit." + u->name + ".master", u->master.cpu());
    tensors.emplace_back("unit." + u->name + ".exp_avg", u->exp_avg.cpu());
    tensors.emplace_back("unit." + u->name + ".exp_avg_sq", u->exp_avg_sq.cpu());
  }
  tensors.emplace_back("rng.cpu", at::detail::getDefaultCPUGenerator().get_state());
  fs::path file = step_dir / rank_file(dist.rank(), dist.world_size());
  write_safetensors(file.string() + ".tmp", tensors,
                    {{"format", "air-fsdp-shard"}, {"step", std::to_string(loop.step)}});
  fs::rename(file.string() + ".tmp", file);
  dist.barrier();
  if (dist.rank() == 0) {
    // The checkpoint is complete only when every rank's file is here; on storage that nodes do not share
    // the other nodes' files are elsewhere, and resuming would load the wrong step on some ranks.
    for (int r = 0; r < dist.world_size(); ++r)
      if (!fs::exists(step_dir / rank_file(r, dist.world_size())))
        throw Error("sharded checkpoint " + step_dir.string() + " lacks rank " + std::to_string(r) + "'s file",
                    "checkpoint_dir must be on storage every node sees (use an absolute path on a shared file system)");
    nlohmann::json units = nlohmann::json::array();
    for (auto& u : fsdp.units()) units.push_back({{"name", u->name}, {"numel", u->numel}});
    nlohmann::json state = {{"step", loop.step},           {"data_epoch", loop.data_epoch},
                            {"data_cursor", loop.data_cursor}, {"seed", loop.seed},
                            {"optimizer_steps", fsdp.optimizer_steps()},
                            {"world_size", dist.world_size()}, {"units", units}};
    write_text_atomically(step_dir / "state.json", state.dump(2) + "\n");
    write_text_atomically(fs::path(dir) / "latest", step_name(loop.step) + "\n");
    if (keep > 0) prune(dir, loop.step, keep);
  }
  dist.barrier();
}

std::string find_sharded_checkpoint(const std::string& dir) {
  fs::path p(dir);
  std::error_code ec;
  if (fs::exists(p / "state.json", ec)) return p.string();  // a step folder itself
  fs::path latest = p / "latest";
  if (!fs::exists(latest, ec)) return "";
  std::string name = read_text(latest);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  return (p / name).string();
}

bool load_sharded_checkpoint(Fsdp& fsdp, const std::string& dir, LoopState& loop) {
  const std::string found = find_sharded_checkpoint(dir);
  check_agreement(fsdp, !found.empty(), dir);
  if (found.empty()) return false;
  fs::path step_dir(found);
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(read_text(step_dir / "state.json"));
  } catch (const std::exception& e) {
    throw Error("cannot read " + (step_dir / "state.json").string() + ": " + e.what(),
                "the sharded checkpoint is damaged; remove " + dir + " to start over");
  }
  check_units(fsdp, state["units"], step_dir / "state.json");
  Dist& dist = fsdp.dist();
  int old_world = state["world_size"].get<int>();
  std::vector<std::shared_ptr<SafetensorsFile>> files;
  if (old_world == dist.world_size()) {
    files.push_back(SafetensorsFile::open((step_dir / rank_file(dist.rank(), old_world)).string()));
  } else {
    for (int r = 0; r < old_world; ++r)
      files.push_back(SafetensorsFile::open((step_dir / rank_file(r, old_world)).string()));
  }
  at::NoGradGuard no_grad;
  for (auto& u : fsdp.units()) {
    const std::pair<const char*, at::Tensor*> parts[] = {
        {"master", &u->master}, {"exp_avg", &u->exp_avg}, {"exp_avg_sq", &u->exp_avg_sq}};
    for (auto [key, target] : parts) {
      std::string tensor = "unit." + u->name + "." + key;
      at::Tensor value;
      if (old_world == dist.world_size()) {
        value = files[0]->get(tensor);
      } else {
        int64_t old_shard = (u->numel + old_world - 1) / old_world;
        value = read_slice(files, tensor, old_shard, dist.rank() * u->shard_numel, u->shard_numel);
        // Padding beyond the real elements stays zero whatever the old layout held there.
        int64_t real_end = u->numel - dist.rank() * u->shard_numel;
        if (real_end < u->shard_numel) value.narrow(0, std::max<int64_t>(0, real_end), u->shard_numel - std::max<int64_t>(0, real_end)).zero_();
      }
      if (value.numel() != u->shard_numel)
        throw Error(step_dir.string() + ": " + tensor + " has " + std::to_string(value.numel()) + " elements, expected " +
                    std::to_string(u->shard_numel));
      target->copy_(value.to(target->scalar_type()));
    }
    u->grad.zero_();
  }
  if (old_world == dist.world_size() && files[0]->contains("rng.cpu")) {
    at::Generator gen = at::detail::getDefaultCPUGenerator();  // a handle: the same generator
    gen.set_state(files[0]->get("rng.cpu").clone());
  }
  loop.step = state["step"].get<int64_t>();
  loop.data_epoch = state["data_epoch"].get<int64_t>();
  loop.data_cursor = state["data_cursor"].get<int64_t>();
  loop.seed = state["seed"].get<int64_t>();
  fsdp.set_optimizer_steps(state["optimizer_steps"].get<int64_t>());
  dist.barrier();
  return true;
}

}  // namespace air::train

