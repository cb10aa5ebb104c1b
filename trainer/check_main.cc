// air-train-check: runs our model on token ids from a safetensors file and writes logits, loss and
// gradients (and optionally a checkpoint after one AdamW step), so scripts/gpu/check_hf.py can compare
// them with transformers. Not part of training; a measuring instrument for docs/gpu-checks.md.
#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/grad_mode.h>
#include <torch/version.h>

#include "core/base/error.h"
#include "trainer/model/block.h"
#include "trainer/model/fp8_check.h"
#include "trainer/checkpoint/hf_checkpoint.h"
#include "trainer/model/llama_config.h"
#include "trainer/model/model.h"
#include "trainer/metrics.h"
#include "trainer/model/ops.h"
#include "trainer/optim/adamw.h"
#include "trainer/checkpoint/safetensors.h"

using namespace air::train;

namespace {

struct Args {
  std::string model, ids, out, save, dtype = "fp32", device = "cuda", engine = "autograd";
  double step_lr = 0;
  bool recompute = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto v = [&]() -> std::string {
      if (i + 1 >= argc) throw air::usage_error(k + " needs a value");
      return argv[++i];
    };
    if (k == "--model") a.model = v();
    else if (k == "--ids") a.ids = v();
    else if (k == "--out") a.out = v();
    else if (k == "--save") a.save = v();
    else if (k == "--dtype") a.dtype = v();
    else if (k == "--device") a.device = v();
    else if (k == "--step-lr") a.step_lr = std::stod(v());
    else if (k == "--recompute") a.recompute = true;
    else if (k == "--engine") a.engine = v();
    else throw air::usage_error("unknown argument " + k);
  }
  if (a.model.empty() || a.ids.empty() || a.out.empty())
    throw air::usage_error("usage: air-train-check --model DIR --ids IDS.safetensors --out OUT.safetensors "
                           "[--dtype fp32|bf16] [--recompute] [--engine autograd|manual] [--step-lr LR] [--save DIR]");
  return a;
}

// Gradients under the checkpoint's names, as transformers names its parameters: Phi-3's q/k/v and gate/up parts
// (our parameters) become the rows of its fused qkv_proj and gate_up_proj.
void add_block_grads(const LlamaConfig& cfg, int64_t l, const std::vector<at::Tensor>& grads,
                     std::vector<std::pair<std::string, at::Tensor>>& out) {
  const auto names = BlockWeights::names(cfg);
  std::map<std::string, at::Tensor> fused;
  for (const auto& [suffix, shape] : checkpoint_block_tensors(cfg)) fused[suffix] = at::Tensor();
  for (size_t i = 0; i < names.size(); ++i) {
    const CheckpointSlot slot = checkpoint_slot(cfg, names[i]);
    const at::Tensor g = grads[i].to(at::kFloat).cpu();
    if (!slot.rows) {
      out.emplace_back("grad." + LlamaModel::block_param_name(l, names[i]), g);
      continue;
    }
    at::Tensor& f = fused[slot.suffix];
    if (!f.defined())
      for (const auto& [suffix, shape] : checkpoint_block_tensors(cfg))
        if (suffix == slot.suffix) f = at::empty(shape, g.options());
    f.narrow(0, slot.row, slot.rows).copy_(g);
  }
  for (const auto& [suffix, t] : fused)
    if (t.defined()) out.emplace_back("grad." + LlamaModel::block_param_name(l, suffix), t);
}

// The training engine's path (trainer/model/block.h): flat compute-dtype buffers, the hand-written backward,
// gradients accumulated by the GEMMs, for every family (embeddings scale, per-layer attention plans, the head's
// norm and soft-capping as the config says). Writes the same tensors as the autograd path; with --save, the
// loaded model as we write a checkpoint (no step), for transformers to load and compare with "logits".
int run_manual(const Args& a, const LlamaModel& m, const at::Tensor& ids, const at::Tensor& targets,
               at::ScalarType compute, const Rope& rope) {
  at::NoGradGuard no_grad;
  const LlamaConfig& cfg = m.config();
  const int64_t B = ids.size(0), T = ids.size(1), N = B * T, L = cfg.num_hidden_layers;
  std::vector<at::Tensor> flats, gflats;
  for (const auto& b : m.blocks()) {
    std::vector<at::Tensor> parts;
    for (const auto& t : b.list()) parts.push_back(t.detach().reshape(-1));
    flats.push_back(at::cat(parts).to(compute));
    gflats.push_back(at::zeros_like(flats.back()));
  }
  at::Tensor embed = m.root().embed_tokens.detach().to(compute), norm = m.root().norm.detach().to(compute);
  at::Tensor head_w = m.root().lm_head.defined() ? m.root().lm_head.detach().to(compute) : embed;
  at::Tensor g_embed = at::zeros_like(embed), g_norm = at::zeros_like(norm);
  at::Tensor g_head = m.root().lm_head.defined() ? at::zeros_like(head_w) : g_embed;
  at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).repeat({B, 1});
  const AttnPlans plans = make_attn_plans(cfg, rope, pos, {}, compute, ids.device());
  at::Tensor flat_ids = ids.reshape({N}), flat_tgt = targets.reshape({N});
  at::Tensor h = embed_fwd(cfg, embed, flat_ids);
  std::vector<at::Tensor> inputs(L);
  std::vector<BlockSaved> saved(L);
  for (int64_t l = 0; l < L; ++l) {
    inputs[l] = h;
    h = block_fwd(cfg, block_view(cfg, flats[l]), h, plans.layer(cfg, l), &saved[l]);
  }
  at::Tensor logits = head_logits(cfg, h, norm, head_w).view({B, T, -1});
  const double count = targets.ne(-100).sum().item<double>();
  HeadResult hr = head_loss_fwd_bwd(cfg, h, norm, head_w, flat_tgt, 1.0 / count, g_norm, g_head, 1024);
  at::Tensor dh = hr.dh;
  for (int64_t l = L - 1; l >= 0; --l)
    dh = block_bwd(cfg, block_view(cfg, flats[l]), block_view(cfg, gflats[l]), inputs[l], saved[l], dh,
                   plans.layer(cfg, l));
  embed_bwd(cfg, g_embed, flat_ids, dh);
  at::Tensor loss = hr.loss_sum / count;

  std::vector<std::pair<std::string, at::Tensor>> out = {{"logits", logits.to(at::kFloat).cpu()},
                                                         {"loss", loss.cpu()}};
  out.emplace_back("grad.model.embed_tokens.weight", g_embed.to(at::kFloat).cpu());
  out.emplace_back("grad.model.norm.weight", g_norm.to(at::kFloat).cpu());
  if (m.root().lm_head.defined()) out.emplace_back("grad.lm_head.weight", g_head.to(at::kFloat).cpu());
  for (int64_t l : {int64_t{0}, L - 1}) {
    int64_t off = 0;
    const auto list = m.blocks()[l].list();
    std::vector<at::Tensor> grads;
    for (const auto& t : list) {
      grads.push_back(gflats[l].narrow(0, off, t.numel()).view(t.sizes()));
      off += t.numel();
    }
    add_block_grads(cfg, l, grads, out);
  }
  if (!a.save.empty()) {
    SaveOptions so;
    so.output_dir = a.save;
    so.dtype = at::kFloat;
    so.source_model_dir = a.model;
    save_checkpoint(m, so);
  }
  write_safetensors(a.out, out);
  std::cout << "loss " << loss.item<double>() << " engine manual" << (ops::have_cuda_kernels() ? " (fused CUDA kernels)" : "")
            << "\n";
  return 0;
}

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define AIR_CHECK_FUSED_ADAMW 1
#else
#define AIR_CHECK_FUSED_ADAMW 0
#endif

// --gemm-speed: the 8B block's large GEMMs (LoRA's folded layouts, rows aligned to 64 elements, and the plain
// ones) timed through at::mm (cuBLAS's heuristic) and ops::gemm_into (per shape the faster of cuBLASLt's timed
// algorithms and at::mm, chosen at its first call): ms and TFLOP/s of each, the median of 20 runs after the first.
int run_gemm_speed() {
  if (!ops::have_cuda_kernels()) {
    std::cout << "gemm-speed: this build has no CUDA kernels\n";
    return 1;
  }
  at::manual_seed(0);
  const auto bf = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const int64_t N = 4096, H = 4096, I = 14336, W = 6144, ld = 4160;
  auto strided = [&](int64_t rows, int64_t cols, int64_t stride) {
    return (at::randn({rows, stride}, bf) * 0.02).narrow(1, 0, cols);
  };
  struct Case {
    const char* what;
    at::Tensor a, b;
  };
  std::vector<Case> cases = {
      {"lora qkv forward [x | xA] @ [W | sB]^T", strided(N, H + 48, ld), strided(W, H + 48, ld).t()},
      {"lora gate/up forward", strided(N, H + 32, ld), strided(2 * I, H + 32, ld).t()},
      {"lora gate/up input gradient dy @ [W | sB]", at::randn({N, 2 * I}, bf), strided(2 * I, H + 32, ld)},
      {"lora qkv input gradient", at::randn({N, W}, bf), strided(W, H + 48, ld)},
      {"lora down input gradient [dy | dxa] @ [W ; A]", strided(N, H + 16, ld), at::randn({H + 16, I}, bf) * 0.02},
      {"o input gradient dy @ W", at::randn({N, H}, bf), at::randn({H, H}, bf) * 0.02},
      {"gate/up forward x @ W^T", at::randn({N, H}, bf), (at::randn({2 * I, H}, bf) * 0.02).t()},
      {"down forward a @ W^T", at::randn({N, I}, bf), (at::randn({H, I}, bf) * 0.02).t()},
  };
  const at::Device dev(at::kCUDA);
  auto median_ms = [&](const std::function<void()>& fn) {
    fn();
    std::vector<double> ms;
    for (int i = 0; i < 20; ++i) {
      synchronize(dev);
      const auto t0 = std::chrono::steady_clock::now();
      fn();
      synchronize(dev);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  for (const Case& c : cases) {
    at::Tensor out = at::empty({c.a.size(0), c.b.size(1)}, bf);
    const double flop = 2.0 * static_cast<double>(c.a.size(0)) * c.a.size(1) * c.b.size(1);
    const double t_aten = median_ms([&] { at::mm_out(out, c.a, c.b); });
    const double t_lt = median_ms([&] { ops::gemm_into(out, c.a, c.b); });
    std::cout << "gemm-speed: " << c.what << " [" << c.a.size(0) << " x " << c.a.size(1) << " x " << c.b.size(1)
              << "]: at::mm " << t_aten << " ms (" << flop / t_aten / 1e9 << " TFLOP/s), ops::gemm's timed choice " << t_lt
              << " ms (" << flop / t_lt / 1e9 << " TFLOP/s), ratio " << t_aten / t_lt << "\n";
  }
  return 0;
}

// --kernels: our fused CUDA kernels against the ATen reference path on random bf16 data of the 8B block's
// sizes; prints the relative error of each and fails past bf16 rounding.
int run_kernel_check() {
  if (!ops::have_cuda_kernels()) {
    std::cout << "kernels: this build has no fused CUDA kernels\n";
    return 1;
  }
  at::manual_seed(0);
  const auto bf = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const int64_t N = 4096, H = 4096, I = 14336, nh = 32, nkv = 8, hd = 128;
  bool ok = true;
  auto report = [&](const char* what, const at::Tensor& got, const at::Tensor& want, double tol) {
    const double rel = ((got.to(at::kFloat) - want.to(at::kFloat)).norm() / want.to(at::kFloat).norm()).item<double>();
    const bool pass = std::isfinite(rel) && rel < tol;
    ok = ok && pass;
    std::cout << "kernels: " << what << " relative error " << rel << (pass ? " ok" : " FAIL") << "\n";
  };
  auto both = [](auto fn) {
    ops::set_use_cuda_kernels(true);
    auto k = fn();
    ops::set_use_cuda_kernels(false);
    auto r = fn();
    ops::set_use_cuda_kernels(true);
    return std::make_pair(k, r);
  };
  at::Tensor x = at::randn({N, H}, bf), w = at::randn({H}, bf), dy = at::randn({N, H}, bf), res = at::randn({N, H}, bf);
  auto fwd = both([&] { return ops::rms_norm_fwd(x, w, 1e-5); });
  report("rms_norm forward", std::get<0>(fwd.first), std::get<0>(fwd.second), 1e-2);
  report("rms_norm rstd", std::get<1>(fwd.first), std::get<1>(fwd.second), 1e-5);
  at::Tensor rstd = std::get<1>(fwd.second);
  at::Tensor dwk = at::zeros({H}, bf), dwr = at::zeros({H}, bf);
  auto bwd = both([&] {
    static int call = 0;
    return ops::rms_norm_bwd(dy, x, w, rstd, call++ == 0 ? dwk : dwr);
  });
  report("rms_norm backward dx", bwd.first, bwd.second, 1e-2);
  report("rms_norm backward dw", dwk, dwr, 1e-2);
  // Strided rows (LoRA's folded GEMM inputs): the forward writing into the left columns of a wider buffer, the
  // backward reading dy and the residual from such views and writing dx into one; the kernel's results must
  // equal its own on contiguous tensors exactly, and the extra columns must stay as they were.
  {
    auto wide = [&](const at::Tensor& t, int64_t extra) {
      at::Tensor buf = at::full({t.size(0), t.size(1) + extra}, 5.0, bf);
      buf.narrow(1, 0, t.size(1)).copy_(t);
      return buf;
    };
    at::Tensor ybuf = wide(at::zeros({N, H}, bf), 64);
    auto [ys, rs] = ops::rms_norm_fwd(x, w, 1e-5, {}, ybuf.narrow(1, 0, H));
    report("rms_norm forward into strided rows", ys, std::get<0>(fwd.first), 1e-6);
    const bool fwd_ok = at::equal(ys, std::get<0>(fwd.first)) && (ybuf.narrow(1, H, 64) == 5.0).all().item<bool>() &&
                        ys.data_ptr() == ybuf.data_ptr();
    at::Tensor dybuf = wide(dy, 48), resbuf = wide(res, 16), dxbuf = wide(at::zeros({N, H}, bf), 16);
    at::Tensor dw1 = at::zeros({H}, bf), dw2 = at::zeros({H}, bf);
    at::Tensor want = ops::rms_norm_bwd(dy, x, w, rstd, dw1, res);
    at::Tensor got = ops::rms_norm_bwd(dybuf.narrow(1, 0, H), x, w, rstd, dw2, resbuf.narrow(1, 0, H), {},
                                       dxbuf.narrow(1, 0, H));
    report("rms_norm backward on strided rows", got, want, 1e-6);
    const bool bwd_ok = at::equal(got, want) && at::equal(dw1, dw2) && (dxbuf.narrow(1, H, 16) == 5.0).all().item<bool>() &&
                        got.data_ptr() == dxbuf.data_ptr();
    std::cout << "kernels: strided rows written in place, extra columns untouched " << (fwd_ok && bwd_ok ? "ok" : "FAIL")
              << "\n";
    ok = ok && fwd_ok && bwd_ok;
    // A frozen weight (LoRA): no weight gradient, more blocks; dx must be the same bits.
    at::Tensor dxbuf2 = wide(at::zeros({N, H}, bf), 16);
    at::Tensor nodw = ops::rms_norm_bwd(dybuf.narrow(1, 0, H), x, w, rstd, {}, resbuf.narrow(1, 0, H), {},
                                        dxbuf2.narrow(1, 0, H));
    const bool nodw_ok = at::equal(nodw, want) && (dxbuf2.narrow(1, H, 16) == 5.0).all().item<bool>();
    std::cout << "kernels: rms_norm backward without the weight gradient, same dx " << (nodw_ok ? "ok" : "FAIL") << "\n";
    ok = ok && nodw_ok;
  }
  // ops::gemm_into through cuBLASLt against ATen's addmm, at the shapes it takes in the 8B block and its LoRA
  // adapters (r 16): the residual-fused forward, x A^T, d(x A^T) into the right columns of a wider buffer, and
  // the adapters' gradients accumulated in place from transposed and column-sliced operands. Each runs twice
  // (the first call times the candidates), and c (where it is not the output) must be left as it was.
  {
    auto gemm_case = [&](const char* what, at::Tensor out_k, at::Tensor out_r, const at::Tensor& a, const at::Tensor& b,
                         bool accumulate, double alpha) {
      const at::Tensor c0 = out_k.clone();
      for (int rep = 0; rep < 2; ++rep) {
        if (accumulate) out_k.copy_(c0);
        ops::gemm_into(out_k, a, b, accumulate ? out_k : at::Tensor(), alpha, 1);
      }
      ops::set_use_cuda_kernels(false);
      ops::gemm_into(out_r, a, b, accumulate ? out_r : at::Tensor(), alpha, 1);
      ops::set_use_cuda_kernels(true);
      report(what, out_k, out_r, 1e-2);
    };
    at::Tensor wo = at::randn({H, H}, bf) * 0.02;
    {
      const at::Tensor res0 = res.clone();
      at::Tensor yk = ops::gemm(x, wo.t(), res), yk2 = ops::gemm(x, wo.t(), res);
      ops::set_use_cuda_kernels(false);
      at::Tensor yr = ops::gemm(x, wo.t(), res);
      ops::set_use_cuda_kernels(true);
      report("gemm x W^T + residual (cuBLASLt, C read in place)", yk, yr, 1e-2);
      // Both against fp32 (one rounding of x W^T + residual): cuBLASLt's may not be worse than ATen's.
      const at::Tensor ref = res.to(at::kFloat) + at::mm(x.to(at::kFloat), wo.to(at::kFloat).t());
      auto err = [&](const at::Tensor& t) { return ((t.to(at::kFloat) - ref).norm() / ref.norm()).item<double>(); };
      const double ek = err(yk), er = err(yr);
      const bool acc_ok = ek <= 1.25 * er + 1e-6;
      std::cout << "kernels: gemm + residual against fp32: cuBLASLt " << ek << ", ATen " << er << (acc_ok ? " ok" : " FAIL")
                << "\n";
      ok = ok && acc_ok;
      const bool same = at::equal(yk, yk2) && at::equal(res, res0);
      std::cout << "kernels: gemm repeatable, residual untouched " << (same ? "ok" : "FAIL") << "\n";
      ok = ok && same;
    }
    at::Tensor A = at::randn({48, H}, bf) * 0.02, Bq = at::randn({H, 16}, bf) * 0.02;
    gemm_case("gemm x A^T (48 columns)", at::empty({N, 48}, bf), at::empty({N, 48}, bf), x, A.t(), false, 1);
    at::Tensor wide_k = at::full({N, H + 64}, 5.0, bf), wide_r = wide_k.clone();
    gemm_case("gemm dy B into the right columns", wide_k.narrow(1, H, 16), wide_r.narrow(1, H, 16), dy, Bq, false, 1);
    const bool cols_ok = (wide_k.narrow(1, H + 16, 48) == 5.0).all().item<bool>() &&
                         (wide_k.narrow(1, 0, H) == 5.0).all().item<bool>();
    std::cout << "kernels: gemm into strided columns, the rest untouched " << (cols_ok ? "ok" : "FAIL") << "\n";
    ok = ok && cols_ok;
    {  // LoRA's o/down forward: residual + (x A^T)(s B)^T into a new tensor (K = 16, C beside D), residual untouched
      const at::Tensor res0 = res.clone(), xa16 = at::randn({N, 16}, bf);
      at::Tensor yk = at::empty({N, H}, bf), yr = at::empty({N, H}, bf);
      ops::gemm_into(yk, xa16, Bq.t(), res);
      ops::set_use_cuda_kernels(false);
      ops::gemm_into(yr, xa16, Bq.t(), res);
      ops::set_use_cuda_kernels(true);
      report("gemm residual + xa (s B)^T (K 16, C beside D)", yk, yr, 1e-2);
      const bool same = at::equal(res, res0);
      std::cout << "kernels: gemm with C beside D leaves C untouched " << (same ? "ok" : "FAIL") << "\n";
      ok = ok && same;
    }
    at::Tensor dxa = at::randn({N, 48}, bf), gA = at::randn({48, H}, bf) * 0.01;
    gemm_case("gemm dA += d(xA)^T x (in place)", gA.clone(), gA.clone(), dxa.t(), x, true, 1);
    at::Tensor gB = at::randn({1024, 16}, bf) * 0.01;
    gemm_case("gemm dB += s dy^T xa (column slices, in place)", gB.clone(), gB.clone(), dy.narrow(1, 1024, 1024).t(),
              dxa.narrow(1, 16, 16), true, 2.0);
  }
  at::Tensor gu = at::randn({N, 2 * I}, bf), da = at::randn({N, I}, bf);
  auto sw = both([&] { return ops::swiglu_fwd(gu); });
  report("swiglu forward", sw.first, sw.second, 1e-2);
  auto swb = both([&] { return ops::swiglu_bwd(gu, da); });
  report("swiglu backward", swb.first, swb.second, 1e-2);
  auto gg = both([&] { return ops::glu_fwd(gu, ops::GluAct::kGeluTanh); });
  report("geglu (tanh GELU) forward", gg.first, gg.second, 1e-2);
  auto ggb = both([&] { return ops::glu_bwd(gu, da, ops::GluAct::kGeluTanh); });
  report("geglu (tanh GELU) backward", ggb.first, ggb.second, 1e-2);
  {  // Qwen3 / Gemma 3 q and k norms, in place in the fused rows: the q heads at column 0, the k heads after them
    at::Tensor qkv0 = at::randn({N, (nh + 2 * nkv) * hd}, bf), wn = (at::randn({hd}, bf) * 0.1 + 1).to(at::kBFloat16);
    for (int64_t col0 : {int64_t{0}, nh * hd}) {
      const int64_t heads = col0 == 0 ? nh : nkv;
      auto hf = both([&] {
        at::Tensor t = qkv0.clone();
        auto [xs, rs] = ops::head_rms_norm_fwd_(t, col0, heads, hd, wn, 1e-6);
        return at::cat({t.flatten(), xs.flatten(), rs.to(at::kBFloat16)});
      });
      report(col0 == 0 ? "head rmsnorm forward (q heads)" : "head rmsnorm forward (k heads)", hf.first, hf.second, 1e-2);
      at::Tensor t = qkv0.clone();
      ops::set_use_cuda_kernels(false);
      auto [xs, rs] = ops::head_rms_norm_fwd_(t, col0, heads, hd, wn, 1e-6);
      ops::set_use_cuda_kernels(true);
      at::Tensor d0 = at::randn_like(qkv0);
      auto hb = both([&] {
        at::Tensor d = d0.clone(), gw = at::zeros({hd}, bf.dtype(at::kFloat));
        ops::head_rms_norm_bwd_(d, col0, heads, hd, xs, wn, rs, gw);
        return std::make_pair(d, gw);
      });
      report(col0 == 0 ? "head rmsnorm backward (q heads)" : "head rmsnorm backward (k heads)", hb.first.first,
             hb.second.first, 1e-2);
      report("head rmsnorm weight gradient", hb.first.second, hb.second.second, 1e-3);
    }
  }
  at::Tensor qkv = at::randn({N, (nh + 2 * nkv) * hd}, bf), ang = at::rand({N, hd / 2}, bf.dtype(at::kFloat)) * 6;
  at::Tensor cos = at::cat({ang.cos(), ang.cos()}, 1).to(at::kBFloat16), sin = at::cat({ang.sin(), ang.sin()}, 1).to(at::kBFloat16);
  for (bool inverse : {false, true}) {
    auto rp = both([&] {
      at::Tensor t = qkv.clone();
      ops::rope_(t, cos, sin, nh, nkv, hd, inverse);
      return t;
    });
    report(inverse ? "rope inverse" : "rope forward", rp.first, rp.second, 1e-2);
  }
  // rope_from_heads (the attention backward's three gradients gathered into [N, W] rows, RoPE's inverse on the
  // way): the same bits as copying them into rows and then rope_ with our kernel, from head-major tensors (as
  // cuDNN returns them) and from token-major views; and its amax.
  {
    const int64_t B = 4, T = N / 4;
    at::Tensor cosN = cos, sinN = sin;
    for (bool token_major : {false, true}) {
      auto make = [&](int64_t heads) {
        return token_major ? at::randn({B, T, heads, hd}, bf).transpose(1, 2) : at::randn({B, heads, T, hd}, bf);
      };
      at::Tensor dq = make(nh), dk = make(nkv), dv = make(nkv);
      at::Tensor want = at::empty({N, (nh + 2 * nkv) * hd}, bf);
      int64_t off = 0;
      for (const at::Tensor* p : {&dq, &dk, &dv}) {
        want.narrow(1, off, p->size(1) * hd).view({B, T, p->size(1), hd}).transpose(1, 2).copy_(*p);
        off += p->size(1) * hd;
      }
      at::Tensor am_want = at::zeros({1}, bf.dtype(at::kFloat)), am_got = at::zeros({1}, bf.dtype(at::kFloat));
      ops::rope_(want, cosN, sinN, nh, nkv, hd, /*inverse=*/true, am_want);
      at::Tensor got = ops::rope_from_heads(dq, dk, dv, cosN, sinN, /*inverse=*/true, am_got);
      ops::set_use_cuda_kernels(false);
      at::Tensor ref = ops::rope_from_heads(dq, dk, dv, cosN, sinN, /*inverse=*/true);
      ops::set_use_cuda_kernels(true);
      report(token_major ? "rope_from_heads (token-major views) vs ATen" : "rope_from_heads vs ATen", got, ref, 1e-2);
      const bool same = at::equal(got, want) && at::equal(am_got, am_want);
      std::cout << "kernels: rope_from_heads" << (token_major ? " (token-major views)" : "")
                << " = copy + rope_, same bits and amax " << (same ? "ok" : "FAIL") << "\n";
      ok = ok && same;
    }
  }
  at::Tensor logits = at::randn({1024, 128256}, bf) * 3, tgt = at::randint(128256, {1024}, bf.dtype(at::kLong));
  tgt.narrow(0, 0, 100).fill_(-100);
  at::Tensor lk = logits.clone(), lr = logits.clone();
  ops::set_use_cuda_kernels(true);
  at::Tensor loss_k = ops::cross_entropy_fwd_bwd_(lk, tgt, 1.0 / 924);
  ops::set_use_cuda_kernels(false);
  at::Tensor loss_r = ops::cross_entropy_fwd_bwd_(lr, tgt, 1.0 / 924);
  ops::set_use_cuda_kernels(true);
  report("cross-entropy loss", loss_k, loss_r, 1e-5);
  report("cross-entropy gradient", lk, lr, 1e-2);
  // AdamW over one 8B block's worth of parameters (218,112,000 + 5: a tail past the 8-element vectors), from the
  // same state: our kernel against the ATen reference ops (fp32 math) and torch's _fused_adamw_, a step with
  // the clipping factor applied, then their times (14 bytes a parameter move).
  {
    const int64_t n = 218112000 + 5;
    at::Tensor p0 = at::randn({n}, bf) * 0.02, g = at::randn({n}, bf) * 1e-3, m0 = at::randn({n}, bf) * 1e-4;
    at::Tensor v0 = at::rand({n}, bf) * 1e-6, clip = at::full({}, 0.37, bf.dtype(at::kFloat));
    const double lr = 1e-3, b1 = 0.9, b2 = 0.95, wd = 0.1, eps = 1e-8;
    const int64_t step = 7;
    auto run = [&](int how, at::Tensor& p, at::Tensor& m, at::Tensor& v) {
      if (how == 2) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
        at::Tensor st = at::full({}, static_cast<double>(step), bf.dtype(at::kFloat));
        at::_fused_adamw_({p}, {g}, {m}, {v}, {}, {st}, lr, b1, b2, wd, eps, false, false,
                          clip.reciprocal().reshape({1}));
#endif
        return;
      }
      ops::set_use_cuda_kernels(how == 0);
      ops::adamw_step_(p, g, m, v, lr, b1, b2, wd, eps, step, clip);
      ops::set_use_cuda_kernels(true);
    };
    at::Tensor pk = p0.clone(), mk = m0.clone(), vk = v0.clone();
    at::Tensor pr = p0.clone(), mr = m0.clone(), vr = v0.clone();
    run(0, pk, mk, vk);
    run(1, pr, mr, vr);
    // Each compared on the change it makes (the parameters move by ~lr per step, far below bf16's step at 0.02).
    report("adamw parameter update vs ATen ops", (pk.to(at::kFloat) - p0.to(at::kFloat)), (pr.to(at::kFloat) - p0.to(at::kFloat)), 2e-2);
    report("adamw exp_avg vs ATen ops", mk, mr, 1e-2);
    report("adamw exp_avg_sq vs ATen ops", vk, vr, 1e-2);
    // A wrong clipping factor must show: the kernel without it differs from the reference with it.
    at::Tensor pn = p0.clone(), mn = m0.clone(), vn = v0.clone();
    ops::adamw_step_(pn, g, mn, vn, lr, b1, b2, wd, eps, step);
    const double miss = ((mn.to(at::kFloat) - mr.to(at::kFloat)).norm() / mr.to(at::kFloat).norm()).item<double>();
    const bool caught = miss > 1e-1;
    ok = ok && caught;
    std::cout << "kernels: adamw without the clipping factor differs by " << miss << (caught ? " (caught) ok" : " FAIL") << "\n";
    // Last: torch's kernel writes the unscaled gradient back into g (grads are mutable in _fused_adamw_).
    if (AIR_CHECK_FUSED_ADAMW) {
      at::Tensor pf = p0.clone(), mf = m0.clone(), vf = v0.clone();
      run(2, pf, mf, vf);
      report("adamw parameter update vs torch _fused_adamw_", (pk.to(at::kFloat) - p0.to(at::kFloat)), (pf.to(at::kFloat) - p0.to(at::kFloat)), 2e-2);
      report("adamw exp_avg_sq vs torch _fused_adamw_", vk, vf, 1e-2);
    }
    for (int how : {0, AIR_CHECK_FUSED_ADAMW ? 2 : 1}) {
      for (int i = 0; i < 3; ++i) run(how, pk, mk, vk);
      synchronize(at::Device(at::kCUDA));
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 10; ++i) run(how, pk, mk, vk);
      synchronize(at::Device(at::kCUDA));
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 10;
      std::cout << "kernels: adamw " << (how == 0 ? "ours" : how == 2 ? "torch _fused_adamw_" : "ATen ops") << " " << ms
                << " ms for " << n << " bf16 parameters (" << 14.0 * n / ms / 1e9 << " TB/s at 14 bytes each)\n";
    }
  }
  (void)res;
  std::cout << "kernels: " << (ok ? "PASS" : "FAIL") << "\n";
  return ok ? 0 : 1;
}

int run(const Args& a) {
  at::Device dev = a.device == "cpu" ? at::Device(at::kCPU) : at::Device(at::kCUDA, 0);
  const at::ScalarType compute = a.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  LlamaConfig cfg = load_model_config(a.model + "/config.json");
  // The autograd reference (model.h) is Llama's block only; the other families run the training engine's path.
  if (a.engine == "autograd" && !cfg.plain_llama())
    throw air::usage_error("--engine autograd computes Llama's block only; model_type '" + cfg.model_type +
                           "' needs --engine manual (the training engine's hand-written block)");
  LlamaModel m(cfg, dev, at::kFloat);
  m.load_pretrained(a.model);
  m.set_requires_grad(true);
  Rope rope(cfg, dev);

  auto in = SafetensorsFile::open(a.ids);
  at::Tensor ids = in->get("input_ids").to(dev, at::kLong);
  at::Tensor labels = in->get("labels").to(dev, at::kLong);
  // transformers shifts labels inside the loss; our data shifts them up front.
  at::Tensor targets = at::full_like(labels, -100);
  targets.narrow(1, 0, labels.size(1) - 1).copy_(labels.narrow(1, 1, labels.size(1) - 1));
  const int64_t B = ids.size(0), T = ids.size(1);
  at::Tensor pos = at::arange(T, ids.options()).unsqueeze(0).repeat({B, 1});

  if (a.engine == "manual") return run_manual(a, m, ids, targets, compute, rope);
  at::Tensor logits = forward_logits(m, rope, ids, pos, {}, compute, a.recompute);
  at::Tensor count = targets.ne(-100).sum().to(at::kFloat);
  at::Tensor loss = loss_sum(logits, targets) / count;
  loss.backward();

  std::vector<std::pair<std::string, at::Tensor>> out = {{"logits", logits.detach().to(at::kFloat).cpu()},
                                                         {"loss", loss.detach().cpu()}};
  const int64_t last = cfg.num_hidden_layers - 1;
  for (const auto& [name, p] : m.named_parameters())
    if (name.find("model.layers.") != 0) out.emplace_back("grad." + name, p.grad().to(at::kFloat).cpu());
  for (int64_t l : {int64_t{0}, last}) {
    std::vector<at::Tensor> grads;
    for (const auto& t : m.blocks()[l].list()) grads.push_back(t.grad());
    add_block_grads(cfg, l, grads, out);
  }
  if (a.step_lr > 0) {
    AdamW opt(m.parameters(), AdamWOptions{}, true);
    opt.step(a.step_lr);
    at::NoGradGuard no_grad;
    out.emplace_back("logits_after", forward_logits(m, rope, ids, pos, {}, at::kFloat, false).to(at::kFloat).cpu());
    if (!a.save.empty()) {
      SaveOptions so;
      so.output_dir = a.save;
      so.dtype = at::kFloat;
      so.max_shard_bytes = 2000000000ull;  // exercises the sharded layout on a 1B model
      so.source_model_dir = a.model;
      save_checkpoint(m, so);
    }
  }
  write_safetensors(a.out, out);
  std::cout << "loss " << loss.item<double>() << " attention " << attention_kernel_name() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 2 && std::string(argv[1]) == "--kernels") return run_kernel_check();
    if (argc == 2 && std::string(argv[1]) == "--gemm-speed") return run_gemm_speed();
    if (argc == 2 && std::string(argv[1]) == "--fp8") return fp8::run_gpu_check(std::cout);
    return run(parse(argc, argv));
  } catch (const air::Error& e) {
    std::cerr << "air-train-check: error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "  hint: " << e.hint() << "\n";
    return e.exit_code();
  } catch (const c10::Error& e) {
    std::cerr << "air-train-check: error: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "air-train-check: error: " << e.what() << "\n";
    return 1;
  }
}
