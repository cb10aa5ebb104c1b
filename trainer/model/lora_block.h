// LoRA on the hand-written decoder block (trainer/model/block.h): the base weights are frozen, so the
// backward computes only the input gradients of the base GEMMs (no weight-gradient GEMMs: a third of the
// block's GEMM work), and each group of adapted linears that share an input (q/k/v on the normed input,
// o on attention's output, gate/up on the second normed input, down on the SwiGLU output) runs its
// adapters together: x @ A^T once for the group (the group's A matrices stacked, [k r, in]), then
// (x A^T) @ B^T with the group's B matrices placed block-diagonally (y = x W^T + s (x A^T) B^T,
// s = alpha / r): added into the base GEMM's output, or, in the engine's base layout (LoraBaseView), folded
// into the base GEMM itself. No copy of a base weight is made.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/lora_config.h"
#include "trainer/model/block.h"
#include "trainer/model/llama_config.h"

namespace air::train {

// One adapter tensor of a block: its name after "model.layers.N." (PEFT's, e.g.
// "self_attn.q_proj.lora_A.weight"), shape ([r, in] for A, [out, r] for B), and module.
struct LoraParamSpec {
  std::string suffix;
  std::vector<int64_t> shape;
  std::string module;  // q_proj ... down_proj
  bool is_a = true;
};
// A block's adapter tensors in the order of their flat buffer: per group (qkv, o, gate/up, down) the
// targeted modules' A matrices back to back, then their B matrices.
std::vector<LoraParamSpec> lora_block_params(const LlamaConfig& c, const LoraConfig& lc);
int64_t lora_block_numel(const LlamaConfig& c, const LoraConfig& lc);
// "self_attn" or "mlp": the submodule a block linear lives in.
const char* lora_parent(const std::string& module);
// PEFT's names of the family's block linears in the adapters' order: Llama's seven (q_proj ... down_proj), or
// Phi-3's four (qkv_proj, o_proj, gate_up_proj, down_proj: its checkpoint's fused modules, adapted whole as
// PEFT does, one A/B pair each with B spanning the fused rows).
std::vector<std::string> lora_block_modules(const LlamaConfig& c);
// lora.target_modules for this family, in lora_block_modules order: all seven Llama names (all-linear, the
// default) mean every block linear of the family; otherwise each name must be one of the family's, else an
// Error naming it, the model type and `where` (the config.json), with the family's names as the hint.
std::vector<std::string> lora_family_targets(const LoraConfig& lc, const LlamaConfig& c, const std::string& where);

// The LoRA engine's frozen base of one block, laid out so that adapters fold into the base GEMMs (no copy of
// a base weight: the folded matrices ARE the base weights, with a few extra columns or rows):
// - q/k/v and gate/up (inputs from an RMSNorm): the weight as [out, in + k r] with s B (block-diagonal) in
//   its last k r columns, so that [x | x A^T] @ that^T gives x W^T + s (x A^T) B^T in one GEMM (no second
//   pass over the output to add the low-rank product), and dy @ that gives dy W and d(x A^T) in one pass
//   over dy;
// - down: the weight as [H + r, I] with A (compute dtype) in its last r rows, so that [dy | d(x A^T)] @ that
//   gives dy W + d(x A^T) A (no read-modify-write of the [N, I] input gradient).
// The folds are used only where the group is targeted; lora_base_pack zeroes the adapter columns and
// lora_block_weights writes the targeted modules' blocks of s B into them (nothing else is ever written).
// The folded matrices' rows start at multiples of `align` elements (64: 128 bytes, so that the GEMMs read
// whole aligned lines; the padding columns are never read).
struct LoraBaseView {
  BlockView w;        // the base weights (qkv, gu and down: strided views into the folded matrices)
  int64_t align = 64;
  at::Tensor qkv_k;   // [W, H + k r] or undefined (no q/k/v adapter)
  at::Tensor gu_k;    // [2I, H + k r] or undefined
  at::Tensor down_n;  // [H + r, I] or undefined
};
int64_t lora_base_numel(const LlamaConfig& c, const LoraConfig& lc, int64_t align = 64);
LoraBaseView lora_base_view(const LlamaConfig& c, const LoraConfig& lc, const at::Tensor& flat, int64_t align = 64);
// Copies a block's weights (BlockWeights::list() order) into `flat` (lora_base_numel elements).
void lora_base_pack(const LlamaConfig& c, const LoraConfig& lc, const std::vector<at::Tensor>& weights,
                    const at::Tensor& flat, int64_t align = 64);

// PEFT's lora_dropout, on the adapter's input only: each adapted module draws its own mask (as PEFT's one
// nn.Dropout per module). The mask of module j of group g in a block is a function of (seed, g, j): the
// backward and a recomputed forward draw the same one again instead of keeping it.
// The mask: 0 (dropped, probability p) or 1, in `o`'s dtype; the kept inputs are then scaled by 1 / (1 - p).
at::Tensor lora_dropout_mask(at::IntArrayRef sizes, const at::TensorOptions& o, double p, uint64_t seed);
struct LoraBlock;
struct LoraGroup;
// The seed of module j's mask in group g (j counts the group's targeted modules).
uint64_t lora_mask_seed(const LoraBlock& b, const LoraGroup& g, int64_t j);

// One group's adapters, as views into a block's flat adapter buffer (compute dtype) and its gradient.
struct LoraGroup {
  at::Tensor A;   // [k r, in]: the group's A matrices stacked (a view)
  at::Tensor B;   // [out, k r]: the group's B matrices block-diagonal, times alpha / r (a small buffer, or the
                  // last columns of wk)
  at::Tensor wk;  // folded [out, in + k r] (LoraBaseView), or undefined
  // The input gradient also through wk ([dy W | dy s B] from one pass over dy; the norm backward reads the strided
  // dy W in place). AIR_TRAIN_LORA_QKV_DGRAD=0: q/k/v takes separate GEMMs (the layout before 2026-12-04).
  bool wk_dgrad = false;
  at::Tensor wn;  // folded [out + k r, in] (down), or undefined
  int group = 0;  // 0 qkv, 1 o, 2 gu, 3 down (the dropout masks' seeds)
  int64_t align = 1;  // the folded GEMMs' other operands get rows aligned so (LoraBaseView::align)
  at::Tensor gA;  // gradient of A, a view [k r, in]
  struct Part {
    int64_t row = 0, rows = 0, col = 0;  // output rows [row, row + rows) take A's rows [col, col + r)
    at::Tensor gB;                       // gradient view [rows, r]
  };
  std::vector<Part> parts;
  bool defined() const { return A.defined(); }
};

struct LoraBlock {
  LoraGroup qkv, o, gu, down;
  int64_t r = 0;
  double scale = 1;  // alpha / r
  double dropout = 0;          // lora.dropout (0: none)
  uint64_t dropout_seed = 0;   // the masks' seed for this block and micro-batch (the engine sets it)
};
// flat: the block's adapters (lora_block_numel elements, compute dtype); grad: where their gradients
// accumulate (same layout) or undefined for a forward only.
LoraBlock lora_block_view(const LlamaConfig& c, const LoraConfig& lc, const at::Tensor& flat, const at::Tensor& grad);
// The same in two parts: the weights (views, and the scaled block-diagonal B built once: a caller may keep
// it while the adapters do not change), then the gradient views.
// With `base`, the targeted q/k/v, gate/up and down groups fold into its matrices (their adapter parts are
// written here).
LoraBlock lora_block_weights(const LlamaConfig& c, const LoraConfig& lc, const at::Tensor& flat,
                             const LoraBaseView* base = nullptr);
void lora_block_attach_grads(const LlamaConfig& c, const LoraConfig& lc, LoraBlock& b, const at::Tensor& grad);

// What a LoRA block keeps for backward: the base block's activations (only the linear inputs an adapter
// needs) and each group's x A^T.
struct LoraSaved {
  BlockSaved base;
  at::Tensor xa_qkv, xa_o, xa_gu, xa_down;
  bool empty() const { return base.empty(); }
  void clear() { *this = LoraSaved(); }
};

// The block's forward with adapters on the frozen base weights `w` (views of the base's flat buffer; with
// folded groups, those of the LoraBaseView the adapters were folded into).
at::Tensor lora_block_fwd(const LlamaConfig& c, const BlockView& w, const LoraBlock& a, const at::Tensor& h,
                          const AttnPlan& plan, LoraSaved* saved);
// The backward: adds the adapters' gradients into a's gradient views, frees `saved`, returns dh. The base
// gets no gradient (the frozen norms' weight gradients are not computed either).
// need_dh false (the first block: the embeddings are frozen): dh is not computed (undefined), which saves
// the q/k/v input-gradient GEMM and the first norm's backward.
// dout_wide: the caller's promise that dout's rows have room for the down adapters' k r more columns, which
// nothing else reads (dout is the left part of a lora_grad_out buffer): the folded down backward then writes
// d(x A^T) there instead of copying dout. The returned dh is such a buffer when down folds.
at::Tensor lora_block_bwd(const LlamaConfig& c, const BlockView& w, const LoraBlock& a, const at::Tensor& h,
                          LoraSaved& saved, const at::Tensor& dout, const AttnPlan& plan,
                          bool need_dh = true, bool dout_wide = false);
// One adapted linear of the block alone (what lora_block_fwd / _bwd run per group; exposed for tests):
// y = x W^T (+ residual) + s sum_j (drop_j(x) A_j^T) B_j^T. The forward sets *xa to x A^T (with dropout:
// the dropped inputs') and *xs to what the backward reads as x (x itself, or its copy inside the folded
// GEMM's input); the backward adds the adapters' gradients and returns dx (undefined without need_dx).
// xcat (folded groups): the GEMM's input buffer [x | x A^T] (lora_folded_input) whose left part x already
// is, written there by its producer; undefined: x is copied into a new one.
// dy_wide (folded down): dy's rows have room for k r more columns nobody reads (lora_block_bwd's dout_wide).
at::Tensor lora_linear_fwd(const at::Tensor& x, const at::Tensor& w, const at::Tensor& residual, const LoraBlock& b,
                           const LoraGroup& g, at::Tensor* xa, at::Tensor* xs, const at::Tensor& xcat = {});
at::Tensor lora_linear_bwd(const at::Tensor& dy, const at::Tensor& w, const at::Tensor& x, const at::Tensor& xa,
                           const LoraBlock& b, const LoraGroup& g, bool need_dx = true, bool dy_wide = false);
// The folded GEMM input [rows, in + k r] (rows aligned as the base view) for group g, or undefined where g
// does not fold: its producer writes x into the left `in` columns (ops' `out`).
at::Tensor lora_folded_input(const LoraGroup& g, int64_t rows, int64_t in, const at::TensorOptions& o);
// A hidden-state gradient [rows, hidden] with room for `room` more columns after each row (the left part of a
// wider buffer, rows aligned to `align` elements), or undefined for room 0. lora_grad_room: the room a
// block's folded down backward uses (its k r; 0 where down does not fold).
at::Tensor lora_grad_out(int64_t rows, int64_t hidden, int64_t room, int64_t align, const at::TensorOptions& o);
int64_t lora_grad_room(const LoraBlock& a);

// Bytes a LoRA block keeps for backward at N tokens.
int64_t lora_block_saved_bytes(const LlamaConfig& c, const LoraConfig& lc, int64_t tokens, int64_t elem_size);

// PEFT's initialisation into a block's fp32 adapter tensors (lora_block_params order): A kaiming-uniform
// with a = sqrt(5) (uniform in +-1/sqrt(in)), or normal(0, 1/r) with init gaussian; B zeros.
void lora_init(const LoraConfig& lc, const std::vector<LoraParamSpec>& specs, std::vector<at::Tensor>& tensors,
               at::Generator& gen);

// The merged weight of one linear: W + scale * B @ A, in fp32 on the CPU (the checkpoint writer then
// rounds it once to save_dtype; rounding to W's bf16 first would lose what save_dtype: fp32 keeps).
at::Tensor lora_merge(const at::Tensor& w, const at::Tensor& a, const at::Tensor& b, double scale);

}  // namespace air::train
