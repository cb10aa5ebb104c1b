// air-train's settings: one typed struct, read from the YAML at HYPERPARAMETERS_PATH (or --config FILE)
// with `--set key=value` overrides. Unknown keys are errors with a did-you-mean hint.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainer/lora_config.h"

namespace air::train {

// One entry of `datasets:` (a mixture; docs/trainer.md, Data): its records, format, split and weight.
struct DatasetSpec {
  std::string name;            // as dataset_name: a file, folder or hub dataset
  std::string format;          // dataset_format for this one ("": the top-level dataset_format)
  std::string split = "train"; // a hub dataset's split
  double weight = 1;           // its share of the mixture: weight / the sum of the weights
};

struct TrainConfig {
  // The reference script's keys (same names, same defaults).
  std::string model_name;
  std::string dataset_name;
  int64_t max_seq_len = 1024;
  int64_t per_device_batch_size = 4;
  int64_t gradient_accumulation_steps = 2;
  double learning_rate = 2e-5;
  int64_t max_steps = 100;
  std::string output_dir = "/tmp/llama-sft";
  // Ours.
  int64_t seed = 42;
  int64_t warmup_steps = 0;
  std::string lr_schedule = "constant";  // constant | cosine
  double min_lr_ratio = 0.1;             // cosine floor, as a fraction of learning_rate
  double weight_decay = 0.01;            // torch.optim.AdamW's default, as the reference uses it
  std::vector<double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double grad_clip = 1.0;                // max global gradient norm; 0 disables
  std::string dtype = "auto";            // auto (bf16 on GPU, fp32 on CPU) | bf16 | fp32: the compute dtype
  std::string master_dtype = "fp32";     // fp32 | bf16: parameters, gradients and AdamW state
  // bf16 | fp8: fp8 runs the forward and both backward GEMMs of every block linear in e4m3 with current
  // scaling (lm_head, embeddings, norms, attention and the loss stay in the compute dtype).
  std::string precision = "bf16";
  std::string fp8_scaling = "tensorwise";  // tensorwise | rowwise: one scale per tensor or per GEMM row
  std::string device = "auto";           // auto | cpu | cuda
  bool packing = false;                  // several examples per row instead of one padded example
  std::string packing_strategy = "bfd";  // bfd (best-fit decreasing) | greedy (shuffled order, next fit)
  // Recompute blocks in backward instead of keeping their activations: auto (keep as many blocks as the
  // free device memory holds, recompute the rest), true (recompute all), false (recompute none).
  std::string activation_checkpointing = "auto";
  std::string init = "pretrained";       // pretrained (weights from model_name) | random
  std::string fused_adamw = "auto";      // auto | on | off (at::_fused_adamw_ on CUDA with libtorch >= 2)
  int64_t log_every = 1;
  int64_t max_examples = 0;              // 0 = the whole dataset
  std::string tokenizer_path;            // default: <model>/tokenizer.json
  // Chat and eval data (docs/trainer.md, "Data").
  std::string dataset_format = "auto";   // auto | alpaca | messages | sharegpt | prompt_completion | text
  std::string bad_records = "error";     // error | skip (counted in the log)
  std::string train_on = "assistant";    // assistant | last_assistant | all
  std::string chat_template;             // a Jinja file; default: the tokenizer's (tokenizer_config.json, chat_template.jinja)
  std::string chat_template_date;        // what strftime_now gives the template (e.g. 2026-12-06); default: today
  std::string eval_dataset;              // a file, folder or hub dataset, or a split of dataset_name (validation, test)
  double eval_split_ratio = 0;           // hold out this fraction of dataset_name (by seed) when eval_dataset is unset
  int64_t eval_every_steps = 0;          // 0: only after the last step (when there is eval data)
  int64_t eval_max_batches = 0;          // micro-batches per rank per evaluation (0: the whole eval set)
  std::vector<DatasetSpec> datasets;     // a mixture instead of dataset_name
  std::string data_cache_dir;            // tokenized-data cache; default: $AIR_DATA_CACHE, else ~/.cache/air/data
  bool save = true;                      // write the consolidated checkpoint at the end
  std::string save_dtype = "auto";       // auto (bf16 when training in bf16, else fp32) | bf16 | fp32
  std::string max_shard_size = "5GB";    // shard model.safetensors above this size (as save_pretrained)
  std::string metrics_file;              // also append the JSON lines here (rank 0)
  // Distributed training and resumption (docs/fsdp.md).
  std::string engine = "auto";           // auto | fsdp: the one engine (kept so existing files still parse)
  std::string grad_sync = "micro_batch"; // micro_batch (reduce-scatter every micro-batch) | step (once per step)
  int64_t checkpoint_every_steps = 0;    // sharded resumable checkpoint every N steps (0: never)
  std::string checkpoint_dir;            // default: <output_dir>/sharded
  std::string resume = "auto";           // auto (the newest complete checkpoint, if any) | never | a path
  LoraConfig lora;                       // `lora:` low-rank adapters on a frozen base (off when absent)

  // Where each key's value came from: "default", "<file>:<line>", or "--set".
  std::map<std::string, std::string> origin;
};

// The keys and a one-line description of each, in printing order.
const std::vector<std::pair<std::string, std::string>>& config_keys();

// Reads YAML text (a mapping; `name` is the file name in errors). Every problem is reported at once in
// one air::Error (exit code 2) with file:line:col locations.
void apply_yaml(TrainConfig& c, const std::string& yaml_text, const std::string& name);
// Applies one `key=value` (value parsed as a YAML scalar or flow list).
void apply_override(TrainConfig& c, const std::string& assignment);
// Checks ranges and combinations (required keys, positive sizes, enum values).
void validate(const TrainConfig& c);
// Prints every key with its value and origin, one per line.
std::string render_config(const TrainConfig& c);

// Parses sizes like "5GB", "500MB", "1000000" into bytes (decimal units, as transformers).
uint64_t parse_size(const std::string& text);
// The closest key by edit distance, or "" when none is close.
std::string closest_key(const std::string& key);

}  // namespace air::train
