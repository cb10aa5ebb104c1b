// PEFT's adapter format (trainer/checkpoint/peft_adapter.h).
#include "trainer/checkpoint/peft_adapter.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "trainer/checkpoint/hf_checkpoint.h"
#include "trainer/checkpoint/safetensors.h"

namespace air::train {
namespace fs = std::filesystem;

std::string peft_adapter_config_json(const LoraConfig& lc, const std::string& base_model) {
  nlohmann::json j = {
      {"peft_type", "LORA"},
      {"task_type", "CAUSAL_LM"},
      {"base_model_name_or_path", base_model},
      {"r", lc.r},
      {"lora_alpha", lc.alpha},
      {"lora_dropout", lc.dropout},
      {"target_modules", lc.target_modules},
      {"bias", "none"},
      {"fan_in_fan_out", false},
      {"inference_mode", true},
      {"init_lora_weights", lc.init == "gaussian" ? nlohmann::json("gaussian") : nlohmann::json(true)},
      {"modules_to_save", nullptr},
      {"use_rslora", false},
      {"use_dora", false},
      {"layers_to_transform", nullptr},
      {"layers_pattern", nullptr},
      {"rank_pattern", nlohmann::json::object()},
      {"alpha_pattern", nlohmann::json::object()},
      {"revision", nullptr},
  };
  // PEFT writes whole alphas as integers; keep that so the file reads the same.
  if (lc.alpha == static_cast<double>(static_cast<int64_t>(lc.alpha))) j["lora_alpha"] = static_cast<int64_t>(lc.alpha);
  return j.dump(2) + "\n";
}

void write_peft_adapter(const std::string& dir, const LoraConfig& lc, const std::string& base_model,
                        const std::vector<std::pair<std::string, at::Tensor>>& adapters) {
  {
    const fs::path p = fs::path(dir) / "adapter_config.json";
    std::ofstream out(p, std::ios::binary);
    out << peft_adapter_config_json(lc, base_model);
    out.flush();
    if (!out) throw Error("cannot write " + p.string());
  }
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  tensors.reserve(adapters.size());
  for (const auto& [name, t] : adapters)
    tensors.emplace_back(kPeftPrefix + name, t.detach().to(at::kCPU, at::kFloat).contiguous());
  write_safetensors((fs::path(dir) / "adapter_model.safetensors").string(), tensors);
}

void save_peft_adapter(const std::string& output_dir, const LoraConfig& lc, const std::string& base_model,
                       const std::vector<std::pair<std::string, at::Tensor>>& adapters) {
  check_output_dir(output_dir);
  fs::path out = fs::absolute(output_dir);
  if (out.filename().empty()) out = out.parent_path();
  const fs::path tmp = out.parent_path() / ("." + out.filename().string() + ".tmp-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec)) throw Error("cannot create " + tmp.string() + (ec ? ": " + ec.message() : ""));
  try {
    write_peft_adapter(tmp.string(), lc, base_model, adapters);
    fs::path old;
    if (fs::exists(out, ec)) {
      old = out.parent_path() / ("." + out.filename().string() + ".old-" + std::to_string(::getpid()));
      fs::remove_all(old, ec);
      if (fs::exists(out / kShardedSubdir, ec)) {
        fs::rename(out / kShardedSubdir, tmp / kShardedSubdir, ec);
        if (ec) throw Error("cannot move " + (out / kShardedSubdir).string() + " into the new adapter: " + ec.message());
      }
      fs::rename(out, old, ec);
      if (ec) throw Error("cannot move the earlier output aside: " + ec.message());
    }
    fs::rename(tmp, out, ec);
    if (ec) throw Error("cannot rename " + tmp.string() + " to " + out.string() + ": " + ec.message());
    if (!old.empty()) fs::remove_all(old, ec);
  } catch (...) {
    if (!fs::exists(tmp / kShardedSubdir, ec)) fs::remove_all(tmp, ec);  // else keep the carried-over checkpoints
    throw;
  }
}

}  // namespace air::train
