// The consolidated Hugging Face checkpoint: config.json, model safetensors (sharded above a size, with an
// index), generation_config.json and the tokenizer files, written into a temporary folder beside
// output_dir and renamed into place only when complete, so a crash never leaves a checkpoint that looks
// whole. Tensors are streamed one at a time so a sharded trainer can gather them unit by unit.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/model/llama_config.h"
#include "trainer/checkpoint/safetensors.h"

namespace air::train {

class LlamaModel;

struct SaveOptions {
  std::string output_dir;
  at::ScalarType dtype = at::kBFloat16;
  uint64_t max_shard_bytes = 5000000000ull;
  std::string source_model_dir;  // generation_config.json and tokenizer side files are copied from here
  std::string tokenizer_path;    // tokenizer.json to copy
  // The `chat_template:` setting's file, when set: the template the model was trained with, saved as the
  // checkpoint's chat_template.jinja and as tokenizer_config.json's chat_template, so it is served with it.
  std::string chat_template_file;
};

// The sharded resumable checkpoints' default folder inside output_dir. Replacing output_dir with a new
// consolidated checkpoint carries it over, so a retried attempt still finds it.
inline constexpr const char* kShardedSubdir = "sharded";

// Fails early (before training) when output_dir cannot be replaced: it exists and holds something
// other than an earlier checkpoint (or only sharded checkpoints), or its parent cannot be created.
void check_output_dir(const std::string& output_dir);

// A "/Volumes/..." output_dir where this process has no /Volumes but the node agent set AIR_VOLUMES_ROOT
// (no private mount namespace on this node): the same path under that root. Else the path unchanged.
std::string map_volumes_path(const std::string& path);

// The tensors of a checkpoint in write order, with the family's HF names and layout (lm_head.weight absent
// when tied; Phi-3's fused self_attn.qkv_proj and mlp.gate_up_proj).
std::vector<TensorSpec> checkpoint_specs(const LlamaConfig& c, at::ScalarType dtype);
// The model's parameter names (LlamaModel::named_parameters) in the order a saver takes them.
std::vector<std::string> checkpoint_write_order(const LlamaConfig& c);

class CheckpointSaver {
 public:
  CheckpointSaver(const LlamaConfig& c, SaveOptions o);
  ~CheckpointSaver();  // removes the temporary folder unless commit() ran
  const std::vector<TensorSpec>& specs() const { return specs_; }  // the file's tensors
  const std::vector<std::string>& order() const { return order_; }  // checkpoint_write_order
  // One parameter, by its name in the model, in order() order. The parts of a fused checkpoint tensor are
  // kept on the CPU until the last one arrives, then written as one.
  void write(const std::string& name, const at::Tensor& t);
  void commit();  // finish the weights and rename the folder into place
  const std::string& temp_dir() const { return tmp_; }

 private:
  LlamaConfig config_;
  SaveOptions o_;
  std::vector<TensorSpec> specs_;
  std::vector<std::string> order_;
  struct Fused {
    at::Tensor t;
    int64_t filled = 0;
  };
  std::map<std::string, Fused> fused_;
  std::string tmp_;
  std::unique_ptr<ShardedWriter> writer_;
  bool committed_ = false;
};

// Saves a local model (every tensor already on one device).
void save_checkpoint(const LlamaModel& m, const SaveOptions& o);

}  // namespace air::train
