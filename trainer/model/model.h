// A Llama-family decoder (Llama 3 / 3.1 / 3.2) as plain tensors and functions, named exactly like
// transformers' LlamaForCausalLM. Each decoder block is one unit with its own weights, and the forward is
// written as separate pieces (embed -> block_forward per block -> head), so FSDP can gather a block's
// weights, call block_forward, and free them again.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "trainer/model/llama_config.h"

namespace air::train {

// One decoder block's weights, in the order of names(c): Llama's nine, then the family's optional ones.
// post_attention_layernorm is the norm before the MLP (Gemma 3 calls it pre_feedforward_layernorm, and
// post_attn_norm / post_ffn_norm are its norms after attention and after the MLP).
struct BlockWeights {
  at::Tensor input_layernorm, q_proj, k_proj, v_proj, o_proj, post_attention_layernorm, gate_proj, up_proj,
      down_proj;
  at::Tensor q_bias, k_bias, v_bias;    // qkv_bias
  at::Tensor q_norm, k_norm;            // qk_norm: [head_dim]
  at::Tensor post_attn_norm, post_ffn_norm;  // sandwich_norm
  static const std::vector<std::string>& names();  // Llama's: "input_layernorm.weight", "self_attn.q_proj.weight", ...
  // The block's parameter names (after "model.layers.N.") for config c, transformers' names (Phi-3's fused
  // checkpoint tensors are split: checkpoint_block_names in trainer/checkpoint/hf_checkpoint.h has the file's).
  static std::vector<std::string> names(const LlamaConfig& c);
  static std::vector<std::vector<int64_t>> shapes(const LlamaConfig& c);
  std::vector<at::Tensor> list() const;  // the defined tensors in names(c) order
  static BlockWeights from_list(const std::vector<at::Tensor>& ts);  // Llama's nine
  static BlockWeights from_list(const LlamaConfig& c, const std::vector<at::Tensor>& ts);
  BlockWeights to(at::ScalarType dtype) const;  // differentiable cast; a no-op when already that dtype
};

// Where a block parameter lives in the family's checkpoint: the checkpoint tensor (its name after
// "model.layers.N.") and, for Phi-3's fused self_attn.qkv_proj and mlp.gate_up_proj, the rows [row, row + rows)
// of it (rows 0: the whole tensor).
struct CheckpointSlot {
  std::string suffix;
  int64_t row = 0, rows = 0;
};
CheckpointSlot checkpoint_slot(const LlamaConfig& c, const std::string& suffix);
// A block's tensors as the family's checkpoint holds them (names after "model.layers.N." and shapes), in the
// order they are written: names(c) with Phi-3's q/k/v and gate/up each one fused tensor.
std::vector<std::pair<std::string, std::vector<int64_t>>> checkpoint_block_tensors(const LlamaConfig& c);

// The parts outside the blocks. lm_head is undefined when the embeddings are tied.
struct RootWeights {
  at::Tensor embed_tokens, norm, lm_head;
  const at::Tensor& output_weight() const { return lm_head.defined() ? lm_head : embed_tokens; }
};

// What attention needs for one micro-batch, computed once and shared by every block.
struct AttentionContext {
  at::Tensor cos, sin;  // [B, T, head_dim] in the compute dtype
  at::Tensor mask;      // undefined: plain causal; else bool [B, 1, T, T], true = may attend
};

// Rotary embeddings over the config's rotary dimensions, with the llama3, linear or longrope frequency
// rescaling (HF's _compute_*_parameters); Gemma 3's sliding layers have their own base.
class Rope {
 public:
  Rope(const LlamaConfig& c, at::Device device);
  // The inverse frequencies of a layer kind at a micro-batch whose largest position is max_position
  // (longrope: the long factors once a position reaches original_max_position_embeddings).
  const at::Tensor& inv_freq_for(bool sliding, int64_t max_position) const;
  double attention_factor() const { return attention_factor_; }  // cos and sin scale (longrope)
  // positions: int64 [B, T]. segments: int [B, T] example ids for packed rows (undefined: one sequence
  // per row, causal only).
  AttentionContext context(const at::Tensor& positions, const at::Tensor& segments, at::ScalarType dtype) const;
  const at::Tensor& inv_freq() const { return inv_freq_; }

 private:
  at::Tensor inv_freq_;  // fp32 [rotary_dim / 2]
  at::Tensor inv_freq_local_, inv_freq_long_;  // Gemma 3's sliding layers; longrope's long factors
  int64_t long_from_ = 0;                      // longrope: positions >= this take inv_freq_long_
  double attention_factor_ = 1.0;
};

// The forward pieces. They compute in the dtype of the weights they are given.
at::Tensor embed(const RootWeights& w, const at::Tensor& input_ids);
at::Tensor block_forward(const LlamaConfig& c, const BlockWeights& w, const at::Tensor& h,
                         const AttentionContext& ctx);
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);
// Final norm + lm_head: logits [B, T, V] in the compute dtype.
at::Tensor head(const LlamaConfig& c, const RootWeights& w, const at::Tensor& h);
// Summed cross-entropy (fp32) over positions whose target is not -100; targets are already shifted
// (targets[t] is the token that position t predicts).
at::Tensor loss_sum(const at::Tensor& logits, const at::Tensor& targets);
// Causal (mask undefined) or masked attention on [B, heads, T, head_dim]; k and v may have fewer heads
// (grouped-query attention): the library's GQA kernels where it has them, else k/v heads repeated.
// scale: the scores' scale (0: 1 / sqrt(head_dim)).
at::Tensor attention_gqa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                         double scale = 0);
// Which attention kernel this build uses ("sdpa" on libtorch >= 2, "manual" on older).
const char* attention_kernel_name();

// Runs fn(inputs) without keeping its intermediate activations; during backward it runs fn again with
// gradients on and back-propagates through that (activation recomputation, as torch.utils.checkpoint).
// Gradients flow to every input that requires grad, weights included.
using RecomputeFn = std::function<at::Tensor(const std::vector<at::Tensor>&)>;
at::Tensor recompute_checkpoint(RecomputeFn fn, const std::vector<at::Tensor>& inputs);

// The model's parameters as leaf tensors. Blocks and root are what FSDP shards (one unit per block + root).
class LlamaModel {
 public:
  // Allocates parameters (uninitialised) of `dtype` on `device`.
  LlamaModel(LlamaConfig config, at::Device device, at::ScalarType dtype);

  const LlamaConfig& config() const { return config_; }
  RootWeights& root() { return root_; }
  const RootWeights& root() const { return root_; }
  std::vector<BlockWeights>& blocks() { return blocks_; }
  const std::vector<BlockWeights>& blocks() const { return blocks_; }

  // HF LlamaForCausalLM names, in checkpoint order (lm_head.weight absent when tied).
  std::vector<std::pair<std::string, at::Tensor>> named_parameters() const;
  std::vector<at::Tensor> parameters() const;
  static std::string block_param_name(int64_t layer, const std::string& suffix);

  // HF's _init_weights: normal(0, initializer_range) for matrices, ones for norms (zeros for (1 + w) norms),
  // zeros for biases.
  void init_random(uint64_t seed);
  // Loads weights from a folder of safetensors (names as transformers); converts dtypes; every missing or
  // misshapen tensor is an error naming the file and the tensor.
  void load_pretrained(const std::string& dir);
  void set_requires_grad(bool on);

 private:
  double one_d_init(const std::string& name) const;  // a 1-D parameter's initial value
  LlamaConfig config_;
  RootWeights root_;
  std::vector<BlockWeights> blocks_;
};

// Full forward of a local (unsharded) model: logits [B, T, V]. Casts weights to `compute` on the fly, so
// fp32 master weights receive their gradients through the cast. With `recompute`, each block is wrapped
// in recompute_checkpoint.
at::Tensor forward_logits(const LlamaModel& m, const Rope& rope, const at::Tensor& input_ids,
                          const at::Tensor& positions, const at::Tensor& segments, at::ScalarType compute,
                          bool recompute);

}  // namespace air::train
