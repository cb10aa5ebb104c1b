// LoRA on the hand-written block (trainer/model/lora_block.h) against autograd through model.h's
// block_forward with the merged weights W + (alpha / r) B A, A and B the leaves: the same output, the
// same input gradient, the same adapter gradients, for partial and full targets, plain and packed rows;
// the base gets no gradient. Plus PEFT's initialisation and the layout of the adapter tensors.

#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>

#include <map>

#include "core/base/error.h"
#include "tests/trainer/model/test_util.h"
#include "trainer/model/lora_block.h"
#include "trainer/model/model.h"

using namespace air::train;

namespace {

void check_close(const at::Tensor& got, const at::Tensor& want, double tol, const std::string& what) {
  INFO(what << ": max |diff| " << (got.to(at::kFloat) - want.to(at::kFloat)).abs().max().item<double>()
            << ", max |want| " << want.abs().max().item<double>());
  REQUIRE(got.sizes() == want.sizes());
  // Relative to the largest value (gradients reach a few hundred here; fp32 sums in different orders).
  const double scale = std::max(1.0, want.abs().max().item<double>());
  REQUIRE(at::allclose(got.to(at::kFloat), want.to(at::kFloat), tol, tol * scale));
}

LoraConfig lora(std::vector<std::string> targets, int64_t r = 4, double alpha = 8) {
  LoraConfig lc;
  lc.enabled = true;
  lc.r = r;
  lc.alpha = alpha;
  lc.target_modules = std::move(targets);
  return lc;
}

}  // namespace

TEST_CASE("lora: adapter tensors have PEFT's names and shapes, grouped by input") {
  LlamaConfig c = testing::tiny_config(false, 97);  // H 32, I 64, 4 heads, 2 kv heads of 8
  auto specs = lora_block_params(c, lora({"q_proj", "v_proj", "down_proj"}));
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.suffix);
  REQUIRE((names == std::vector<std::string>{"self_attn.q_proj.lora_A.weight", "self_attn.v_proj.lora_A.weight",
                                          "self_attn.q_proj.lora_B.weight", "self_attn.v_proj.lora_B.weight",
                                          "mlp.down_proj.lora_A.weight", "mlp.down_proj.lora_B.weight"}));
  REQUIRE((specs[0].shape == std::vector<int64_t>{4, 32}));   // A: [r, in]
  REQUIRE((specs[3].shape == std::vector<int64_t>{16, 4}));   // v's B: [kv heads * head_dim, r]
  REQUIRE((specs[4].shape == std::vector<int64_t>{4, 64}));   // down's A: [r, intermediate]
  REQUIRE((specs[5].shape == std::vector<int64_t>{32, 4}));
  REQUIRE(lora_block_numel(c, lora({"q_proj", "v_proj", "down_proj"})) == 4 * 32 * 2 + 32 * 4 + 16 * 4 + 4 * 64 + 32 * 4);
  REQUIRE(lora_block_params(c, lora(lora_module_names())).size() == 14);
}

TEST_CASE("lora: PEFT's default init: A uniform within 1/sqrt(in), B zeros, gaussian A ~ N(0, 1/r)") {
  LlamaConfig c = testing::tiny_config(false, 97);
  for (const char* init : {"default", "gaussian"}) {
    LoraConfig lc = lora({"o_proj", "up_proj"}, 8);
    lc.init = init;
    auto specs = lora_block_params(c, lc);
    std::vector<at::Tensor> ts;
    for (const auto& s : specs) ts.push_back(at::full(s.shape, 7.0));
    auto gen = at::detail::createCPUGenerator(3);
    lora_init(lc, specs, ts, gen);
    for (size_t i = 0; i < ts.size(); ++i) {
      INFO(init << " " << specs[i].suffix);
      if (!specs[i].is_a) {
        REQUIRE(ts[i].abs().max().item<double>() == 0);
        continue;
      }
      const double in = static_cast<double>(specs[i].shape[1]);
      if (std::string(init) == "default") {
        REQUIRE(ts[i].abs().max().item<double>() <= 1 / std::sqrt(in));
        REQUIRE(ts[i].abs().max().item<double>() > 0.8 / std::sqrt(in));
      } else {
        REQUIRE(ts[i].std().item<double>() == Approx(1.0 / 8).epsilon(0.2));
      }
    }
  }
}

TEST_CASE("lora: the block's forward and backward equal autograd through the merged weights") {
  const std::vector<std::vector<std::string>> target_sets = {
      lora_module_names(), {"q_proj", "v_proj"}, {"k_proj", "gate_proj", "down_proj"}, {"o_proj", "up_proj"}};
  for (const auto& targets : target_sets)
    for (bool packed : {false, true})
    for (bool fold : {false, true}) {
      LlamaConfig c = testing::tiny_config(false, 97);
      LoraConfig lc = lora(targets, 4, 12);  // scaling 3
      INFO(render_lora(lc) << (packed ? " packed" : " plain") << (fold ? ", folded into the base GEMMs" : ""));
      LlamaModel m(c, at::kCPU, at::kFloat);
      m.init_random(5);
      Rope rope(c, at::kCPU);
      const int64_t B = 2, T = 12, N = B * T, H = c.hidden_size;
      at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).repeat({2, 1}), seg;
      if (packed) {
        seg = at::ones({2, T}, at::kInt);
        seg[0].narrow(0, 5, 7).fill_(2);
        pos[0].narrow(0, 5, 7).copy_(at::arange(7, at::kLong));
      }
      at::manual_seed(11);
      at::Tensor h = at::randn({N, H}), dout = at::randn({N, H});
      // Non-zero A and B (trained adapters), so that every gradient path is exercised.
      auto specs = lora_block_params(c, lc);
      std::vector<at::Tensor> ad;
      for (const auto& s : specs) ad.push_back(at::randn(s.shape) * 0.2);

      // Reference: autograd; W_eff = W + s B A per adapted module, the base weights constants.
      std::vector<at::Tensor> leaves;
      for (const auto& t : ad) leaves.push_back(t.clone().requires_grad_(true));
      std::map<std::string, std::pair<at::Tensor, at::Tensor>> ab;  // module -> (A, B)
      for (size_t i = 0; i < specs.size(); ++i)
        (specs[i].is_a ? ab[specs[i].module].first : ab[specs[i].module].second) = leaves[i];
      const BlockWeights& bw = m.blocks()[0];
      auto eff = [&](const std::string& mod, const at::Tensor& w) {
        auto it = ab.find(mod);
        return it == ab.end() ? w : w + lc.scaling() * at::mm(it->second.second, it->second.first);
      };
      BlockWeights we = bw;
      we.q_proj = eff("q_proj", bw.q_proj);
      we.k_proj = eff("k_proj", bw.k_proj);
      we.v_proj = eff("v_proj", bw.v_proj);
      we.o_proj = eff("o_proj", bw.o_proj);
      we.gate_proj = eff("gate_proj", bw.gate_proj);
      we.up_proj = eff("up_proj", bw.up_proj);
      we.down_proj = eff("down_proj", bw.down_proj);
      at::Tensor hr = h.clone().requires_grad_(true);
      at::Tensor out_ref = block_forward(c, we, hr.view({B, T, H}), rope.context(pos, seg, at::kFloat)).view({N, H});
      std::vector<at::Tensor> wrt = {hr};
      wrt.insert(wrt.end(), leaves.begin(), leaves.end());
      auto grads = torch::autograd::grad({out_ref}, wrt, {dout});

      // Ours: base flat (frozen; block_view's layout, or the engine's with the adapters folded in),
      // adapters and their gradients flat.
      std::vector<at::Tensor> parts;
      for (const auto& t : bw.list()) parts.push_back(t.reshape(-1));
      at::Tensor base = at::cat(parts), base_before = base.clone();
      at::Tensor fbase = at::full({lora_base_numel(c, lc)}, 7.0);  // 7: the adapter slots must be written
      lora_base_pack(c, lc, bw.list(), fbase);
      LoraBaseView fview = lora_base_view(c, lc, fbase);
      for (const at::Tensor* t : {&fview.qkv_k, &fview.gu_k})  // rows start at multiples of 64 elements
        if (t->defined()) REQUIRE(t->stride(0) % 64 == 0);
      const BlockView w = fold ? fview.w : block_view(c, base);
      std::vector<at::Tensor> aparts;
      for (const auto& t : ad) aparts.push_back(t.reshape(-1));
      at::Tensor aflat = at::cat(aparts), gflat = at::zeros_like(aflat);
      REQUIRE(aflat.numel() == lora_block_numel(c, lc));
      LoraBlock a = lora_block_weights(c, lc, aflat, fold ? &fview : nullptr);
      lora_block_attach_grads(c, lc, a, gflat);
      if (fold) {
        auto has = [&](std::initializer_list<const char*> ms) {
          for (const char* m : ms)
            if (lc.targets(m)) return true;
          return false;
        };
        REQUIRE(a.qkv.wk.defined() == has({"q_proj", "k_proj", "v_proj"}));
        REQUIRE(a.gu.wk.defined() == has({"gate_proj", "up_proj"}));
        REQUIRE(a.down.wn.defined() == has({"down_proj"}));
      }
      AttnPlan plan = make_attn_plan(c, rope.inv_freq(), pos, seg, at::kFloat, at::kCPU);
      LoraSaved saved;
      at::Tensor out = lora_block_fwd(c, w, a, h, plan, &saved);
      check_close(out, out_ref.detach(), 1e-5, "block output");
      at::Tensor dh = lora_block_bwd(c, w, a, h, saved, dout, plan);
      REQUIRE(saved.empty());
      check_close(dh, grads[0], 1e-4, "input gradient");
      std::vector<at::Tensor> want;
      for (size_t i = 1; i < grads.size(); ++i) want.push_back(grads[i].reshape(-1));
      check_close(gflat, at::cat(want), 1e-4, "adapter gradients");
      REQUIRE(gflat.abs().max().item<double>() > 0);
      REQUIRE(at::equal(base, base_before));  // frozen: nothing writes the base
      const std::vector<at::Tensor> orig = bw.list();
      const int64_t q = orig[1].size(0), kv = orig[2].size(0), I = orig[6].size(0);
      REQUIRE(at::equal(fview.w.qkv.narrow(0, 0, q), orig[1]));
      REQUIRE(at::equal(fview.w.qkv.narrow(0, q + kv, kv), orig[3]));
      REQUIRE(at::equal(fview.w.gu.narrow(0, I, I), orig[7]));
      REQUIRE(at::equal(fview.w.down, orig[8]));
      REQUIRE(at::equal(fview.w.o, orig[4]));

      // Recomputation (a forward without saving, then one with) and accumulation add up.
      lora_block_fwd(c, w, a, h, plan, nullptr);
      lora_block_fwd(c, w, a, h, plan, &saved);
      lora_block_bwd(c, w, a, h, saved, dout, plan);
      check_close(gflat, 2 * at::cat(want), 1e-4, "accumulated adapter gradients");

      // The engine's wide gradients (lora_grad_out): dout the left part of a buffer whose extra columns hold
      // garbage; the folded down backward writes its adapter columns there. Same results, and the returned
      // dh is wide again for the block below.
      const int64_t room = lora_grad_room(a);
      REQUIRE(room == (fold && lc.targets("down_proj") ? lc.r : 0));
      if (room) {
        at::Tensor wide = lora_grad_out(N, H, room, 64, dout.options());
        REQUIRE(wide.stride(0) >= H + room);
        wide.as_strided({N, wide.stride(0)}, {wide.stride(0), 1}).fill_(3.0);
        wide.copy_(dout);
        gflat.zero_();
        lora_block_fwd(c, w, a, h, plan, &saved);
        at::Tensor dh2 = lora_block_bwd(c, w, a, h, saved, wide, plan, true, /*dout_wide=*/true);
        check_close(dh2, grads[0], 1e-4, "input gradient from a wide dout");
        check_close(gflat, at::cat(want), 1e-4, "adapter gradients from a wide dout");
        REQUIRE(dh2.stride(0) >= H + room);
        REQUIRE(at::equal(wide, dout));  // dout's own columns are only read
        // Without room, the promise is refused rather than writing past dout's rows.
        lora_block_fwd(c, w, a, h, plan, &saved);
        REQUIRE_THROWS_AS(lora_block_bwd(c, w, a, h, saved, dout, plan, true, true), air::Error);
      }
    }
}

TEST_CASE("lora: dropout on the adapter input, one mask per module, equals autograd with those masks") {
  LlamaConfig c = testing::tiny_config(false, 97);  // H 32, I 64
  const int64_t H = c.hidden_size, I = c.intermediate_size, N = 40;
  for (bool fold : {false, true}) {
    LoraConfig lc = lora(lora_module_names(), 4, 12);  // scaling 3
    lc.dropout = 0.3;
    INFO((fold ? "folded" : "separate GEMMs"));
    LlamaModel m(c, at::kCPU, at::kFloat);
    m.init_random(5);
    at::Tensor fbase = at::zeros({lora_base_numel(c, lc)});
    lora_base_pack(c, lc, m.blocks()[0].list(), fbase);
    LoraBaseView fview = lora_base_view(c, lc, fbase);
    auto specs = lora_block_params(c, lc);
    at::manual_seed(3);
    at::Tensor aflat = at::randn({lora_block_numel(c, lc)}) * 0.2, gflat = at::zeros_like(aflat);
    LoraBlock a = lora_block_weights(c, lc, aflat, fold ? &fview : nullptr);
    lora_block_attach_grads(c, lc, a, gflat);
    a.dropout_seed = 77;
    // gate/up (two modules: two masks) and down (one), each against autograd with the masks drawn again.
    struct Case {
      const LoraGroup* g;
      at::Tensor w;
      int64_t in;
    };
    for (const Case& k : {Case{&a.gu, fview.w.gu, H}, Case{&a.down, fview.w.down, I}}) {
      const LoraGroup& g = *k.g;
      const int64_t r = a.r, mods = g.A.size(0) / r;
      at::Tensor x = at::randn({N, k.in}), dy = at::randn({N, k.w.size(0)});
      gflat.zero_();
      at::Tensor xa, xs;
      at::Tensor y = lora_linear_fwd(x, k.w, at::Tensor(), a, g, &xa, &xs);
      at::Tensor dx = lora_linear_bwd(dy, k.w, xs, xa, a, g);

      at::Tensor xr = x.clone().requires_grad_(true);
      at::Tensor yr = at::mm(xr, k.w.t());
      std::vector<at::Tensor> as, bs, masks;
      for (int64_t j = 0; j < mods; ++j) {
        const auto& p = g.parts[static_cast<size_t>(j)];
        as.push_back(g.A.narrow(0, j * r, r).clone().requires_grad_(true));
        bs.push_back((g.B.narrow(0, p.row, p.rows).narrow(1, p.col, r) / a.scale).clone().requires_grad_(true));
        masks.push_back(lora_dropout_mask(x.sizes(), x.options(), lc.dropout, lora_mask_seed(a, g, j)));
        at::Tensor low = a.scale * at::mm(at::mm(xr * masks.back() / (1 - lc.dropout), as.back().t()), bs.back().t());
        yr = yr + at::constant_pad_nd(low, {p.row, k.w.size(0) - p.row - p.rows});  // into the module's columns
      }
      // The masks: values 0 or 1, about p of them zero, a different one per module, the same again from the
      // same seed.
      at::Tensor m0 = masks[0];
      REQUIRE(at::equal(m0, lora_dropout_mask(x.sizes(), x.options(), lc.dropout, lora_mask_seed(a, g, 0))));
      const double zeros = (m0 == 0).to(at::kFloat).mean().item<double>();
      REQUIRE(zeros > 0.2);
      REQUIRE(zeros < 0.4);
      REQUIRE(at::equal(m0.masked_select(m0 != 0), at::ones({(m0 != 0).sum().item<int64_t>()})));
      if (mods > 1) REQUIRE_FALSE(at::equal(masks[0], masks[1]));
      check_close(y, yr.detach(), 1e-5, "output");
      std::vector<at::Tensor> wrt = {xr};
      wrt.insert(wrt.end(), as.begin(), as.end());
      wrt.insert(wrt.end(), bs.begin(), bs.end());
      auto grads = torch::autograd::grad({yr}, wrt, {dy});
      check_close(dx, grads[0], 1e-4, "input gradient");
      for (int64_t j = 0; j < mods; ++j) {
        const auto& p = g.parts[static_cast<size_t>(j)];
        check_close(g.gA.narrow(0, j * r, r), grads[static_cast<size_t>(1 + j)], 1e-4, "A gradient");
        check_close(p.gB, grads[static_cast<size_t>(1 + mods + j)], 1e-4, "B gradient");
      }
    }
    // The whole block: the backward draws the forward's masks again (a recomputed forward too), so two
    // passes accumulate exactly twice one; another seed gives another output.
    Rope rope(c, at::kCPU);
    at::Tensor pos = at::arange(10, at::kLong).unsqueeze(0).repeat({2, 1});
    AttnPlan plan = make_attn_plan(c, rope.inv_freq(), pos, at::Tensor(), at::kFloat, at::kCPU);
    at::Tensor h = at::randn({20, H}), dout = at::randn({20, H});
    gflat.zero_();
    LoraSaved saved;
    at::Tensor out = lora_block_fwd(c, fview.w, a, h, plan, &saved);
    at::Tensor dh = lora_block_bwd(c, fview.w, a, h, saved, dout, plan);
    at::Tensor once = gflat.clone();
    REQUIRE(once.abs().max().item<double>() > 0);
    REQUIRE(at::equal(lora_block_fwd(c, fview.w, a, h, plan, nullptr), out));
    lora_block_fwd(c, fview.w, a, h, plan, &saved);
    REQUIRE(at::equal(lora_block_bwd(c, fview.w, a, h, saved, dout, plan), dh));
    check_close(gflat, 2 * once, 1e-6, "accumulated adapter gradients");
    LoraBlock other = a;
    other.dropout_seed = 78;
    REQUIRE_FALSE(at::allclose(lora_block_fwd(c, fview.w, other, h, plan, nullptr), out));
    other.dropout = 0;
    at::Tensor plain = lora_block_fwd(c, fview.w, other, h, plan, nullptr);
    REQUIRE_FALSE(at::allclose(plain, out));
  }
}

TEST_CASE("lora: merging adds (alpha / r) B A to the base weight") {
  at::manual_seed(2);
  at::Tensor w = at::randn({6, 5}), a = at::randn({2, 5}), b = at::randn({6, 2});
  check_close(lora_merge(w, a, b, 1.5), w + 1.5 * at::mm(b, a), 1e-6, "merged");
  at::Tensor x = at::randn({3, 5});
  check_close(at::mm(x, lora_merge(w, a, b, 1.5).t()), at::mm(x, w.t()) + 1.5 * at::mm(at::mm(x, a.t()), b.t()), 1e-5,
              "merged forward equals base + adapter");
  // A bf16 base (the GPU's) merges in fp32 and stays fp32: save_dtype decides the one rounding.
  at::Tensor wb = w.to(at::kBFloat16);
  at::Tensor m = lora_merge(wb, a * 1e-3, b, 1.5);
  REQUIRE(m.scalar_type() == at::kFloat);
  check_close(m, wb.to(at::kFloat) + 1.5e-3 * at::mm(b, a), 1e-6, "bf16 base merged in fp32");
  CHECK_FALSE(at::equal(m, m.to(at::kBFloat16).to(at::kFloat)));  // not rounded to bf16
}
