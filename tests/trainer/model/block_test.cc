// The hand-written block forward/backward (trainer/model/block.h) and its elementwise ops (trainer/model/ops.h) against
// the autograd reference (model.h's block_forward, head, loss_sum): the same outputs, and the same input
// and weight gradients, for plain causal rows and for packed rows.

#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <torch/csrc/autograd/autograd.h>

#include "tests/trainer/model/test_util.h"
#include "trainer/model/block.h"
#include "trainer/model/model.h"
#include "trainer/model/ops.h"

using namespace air::train;

namespace {

void check_close(const at::Tensor& got, const at::Tensor& want, double tol, const char* what) {
  INFO(what << ": max |diff| " << (got.to(at::kFloat) - want.to(at::kFloat)).abs().max().item<double>()
            << ", max |want| " << want.abs().max().item<double>());
  REQUIRE(got.sizes() == want.sizes());
  REQUIRE(at::allclose(got.to(at::kFloat), want.to(at::kFloat), tol, tol));
}

struct Fixture {
  LlamaConfig c = testing::tiny_config(false, 97);
  LlamaModel m{c, at::kCPU, at::kFloat};
  Fixture() { m.init_random(5); }
  // The block's parameters as one flat buffer in BlockWeights order (what an FSDP unit holds).
  at::Tensor flat_block(int64_t l) const {
    std::vector<at::Tensor> parts;
    for (const auto& t : m.blocks()[l].list()) parts.push_back(t.reshape(-1));
    return at::cat(parts);
  }
};

// Positions and, for packed rows, segments: row 0 holds examples of 5 and 7 tokens, row 1 of 12 tokens.
void rows(bool packed, at::Tensor& pos, at::Tensor& seg) {
  const int64_t T = 12;
  pos = at::arange(T, at::kLong).unsqueeze(0).repeat({2, 1});
  seg = at::Tensor();
  if (!packed) return;
  seg = at::ones({2, T}, at::kInt);
  seg[0].narrow(0, 5, 7).fill_(2);
  pos[0].narrow(0, 5, 7).copy_(at::arange(7, at::kLong));
}

}  // namespace

TEST_CASE("ops: RMSNorm, SwiGLU and RoPE backward equal autograd's gradients") {
  at::manual_seed(3);
  const int64_t N = 6, H = 16;
  at::Tensor x = at::randn({N, H}), w = at::randn({H}), dy = at::randn({N, H});
  auto [y, rstd] = ops::rms_norm_fwd(x, w, 1e-5);
  at::Tensor xr = x.clone().requires_grad_(true), wr = w.clone().requires_grad_(true);
  at::Tensor yr = rms_norm(xr, wr, 1e-5);
  check_close(y, yr.detach(), 1e-5, "rms forward");
  auto g = torch::autograd::grad({yr}, {xr, wr}, {dy});
  at::Tensor dw = at::zeros({H});
  check_close(ops::rms_norm_bwd(dy, x, w, rstd, dw), g[0], 1e-5, "rms dx");
  check_close(dw, g[1], 1e-5, "rms dw");

  at::Tensor gu = at::randn({N, 2 * H}), da = at::randn({N, H});
  at::Tensor gur = gu.clone().requires_grad_(true);
  at::Tensor ar = at::silu(gur.narrow(1, 0, H)) * gur.narrow(1, H, H);
  check_close(ops::swiglu_fwd(gu), ar.detach(), 1e-6, "swiglu forward");
  check_close(ops::swiglu_bwd(gu, da), torch::autograd::grad({ar}, {gur}, {da})[0], 1e-5, "swiglu backward");

  // RoPE in place on a fused [q | k | v] row: q and k rotate, v does not; inverse is the transpose.
  const int64_t nh = 2, nkv = 1, hd = 8;
  at::Tensor qkv = at::randn({N, (nh + 2 * nkv) * hd}), ang = at::randn({N, hd / 2});
  at::Tensor cos = at::cat({ang.cos(), ang.cos()}, 1), sin = at::cat({ang.sin(), ang.sin()}, 1);
  at::Tensor rotated = qkv.clone();
  ops::rope_(rotated, cos, sin, nh, nkv, hd, false);
  check_close(rotated.narrow(1, (nh + nkv) * hd, nkv * hd), qkv.narrow(1, (nh + nkv) * hd, nkv * hd), 0, "v untouched");
  at::Tensor q0 = qkv.narrow(1, 0, hd), half1 = q0.narrow(1, 0, hd / 2), half2 = q0.narrow(1, hd / 2, hd / 2);
  at::Tensor want = q0 * cos + at::cat({-half2, half1}, 1) * sin;  // transformers' apply_rotary_pos_emb
  check_close(rotated.narrow(1, 0, hd), want, 1e-6, "rope forward");
  at::Tensor other = at::randn_like(qkv), back = other.clone();
  ops::rope_(back, cos, sin, nh, nkv, hd, true);
  const double lhs = (rotated * other).sum().item<double>(), rhs = (qkv * back).sum().item<double>();
  REQUIRE(lhs == Approx(rhs).epsilon(1e-5));  // <R x, y> == <x, R^T y>
}

TEST_CASE("block: the hand-written forward and backward equal autograd's, plain and packed rows") {
  for (bool packed : {false, true}) {
    INFO((packed ? "packed rows" : "plain causal rows"));
    Fixture f;
    Rope rope(f.c, at::kCPU);
    at::Tensor pos, seg;
    rows(packed, pos, seg);
    const int64_t B = 2, T = 12, N = B * T, H = f.c.hidden_size;
    at::manual_seed(11);
    at::Tensor h = at::randn({N, H}), dout = at::randn({N, H});

    // Reference: autograd through model.h's block_forward.
    AttentionContext ctx = rope.context(pos, seg, at::kFloat);
    std::vector<at::Tensor> ws;
    for (const auto& t : f.m.blocks()[0].list()) ws.push_back(t.clone().requires_grad_(true));
    at::Tensor hr = h.clone().requires_grad_(true);
    at::Tensor out_ref = block_forward(f.c, BlockWeights::from_list(ws), hr.view({B, T, H}), ctx).view({N, H});
    std::vector<at::Tensor> wrt = {hr};
    wrt.insert(wrt.end(), ws.begin(), ws.end());
    auto grads = torch::autograd::grad({out_ref}, wrt, {dout});

    // Ours: weights and gradients as views of flat buffers.
    at::Tensor flat = f.flat_block(0), gflat = at::zeros_like(flat);
    REQUIRE(flat.numel() == block_numel(f.c));
    AttnPlan plan = make_attn_plan(f.c, rope.inv_freq(), pos, seg, at::kFloat, at::kCPU);
    BlockView w = block_view(f.c, flat), g = block_view(f.c, gflat);
    BlockSaved saved;
    at::Tensor out = block_fwd(f.c, w, h, plan, &saved);
    check_close(out, out_ref.detach(), 1e-5, "block output");
    REQUIRE(saved.bytes() > 0);
    at::Tensor dh = block_bwd(f.c, w, g, h, saved, dout, plan);
    REQUIRE(saved.empty());
    check_close(dh, grads[0], 1e-4, "input gradient");
    // The flat gradient in BlockWeights order equals autograd's per-parameter gradients laid end to end.
    std::vector<at::Tensor> parts;
    for (size_t i = 1; i < grads.size(); ++i) parts.push_back(grads[i].reshape(-1));
    check_close(gflat, at::cat(parts), 1e-4, "weight gradients");

    // A second backward accumulates (gradient accumulation adds into the same buffer).
    block_fwd(f.c, w, h, plan, &saved);
    block_bwd(f.c, w, g, h, saved, dout, plan);
    check_close(gflat, 2 * at::cat(parts), 1e-4, "accumulated weight gradients");

    // write_grads (a step's first micro-batch): the linears' gradients are written over whatever the buffer
    // held (9: never read), the norms' still added (their 0 here, as zero_grad leaves them).
    gflat.fill_(9.0);
    at::Tensor norms_mask = at::ones_like(gflat, at::kBool);
    for (const auto& [off, len] : block_linear_ranges(f.c)) norms_mask.narrow(0, off, len).fill_(false);
    gflat.masked_fill_(norms_mask, 0.0);
    REQUIRE(norms_mask.sum().item<int64_t>() == 2 * H);  // exactly the two norm weights lie outside the ranges
    block_fwd(f.c, w, h, plan, &saved);
    block_bwd(f.c, w, g, h, saved, dout, plan, nullptr, nullptr, /*write_grads=*/true);
    check_close(gflat, at::cat(parts), 1e-4, "written weight gradients");
  }
}

TEST_CASE("block: the chunked head + cross-entropy equals autograd's loss and gradients") {
  for (bool tied : {true, false}) {
    Fixture f;
    const int64_t N = 20, H = f.c.hidden_size, V = f.c.vocab_size;
    at::manual_seed(4);
    at::Tensor h = at::randn({N, H});
    at::Tensor norm_w = at::randn({H}), head_w = at::randn({V, H}) * 0.1;
    at::Tensor targets = at::randint(V, {N}, at::kLong);
    targets.narrow(0, 0, 5).fill_(-100);  // prompt positions: no target
    const double scale = 1.0 / 15;
    at::Tensor hr = h.clone().requires_grad_(true), nr = norm_w.clone().requires_grad_(true),
               wr = head_w.clone().requires_grad_(true);
    RootWeights rw{tied ? wr : at::Tensor(), nr, tied ? at::Tensor() : wr};
    at::Tensor loss_ref = loss_sum(head(f.c, rw, hr.unsqueeze(0)), targets.unsqueeze(0));
    auto g = torch::autograd::grad({loss_ref * scale}, {hr, nr, wr});
    for (int64_t chunk : {int64_t{7}, int64_t{64}}) {
      INFO("chunk rows " << chunk << (tied ? ", tied" : ", untied"));
      at::Tensor gn = at::zeros({H}), gw = at::zeros({V, H});
      HeadResult r = head_loss_fwd_bwd(f.c, h, norm_w, head_w, targets, scale, gn, gw, chunk);
      REQUIRE(r.loss_sum.item<double>() == Approx(loss_ref.item<double>()).epsilon(1e-5));
      check_close(r.dh, g[0], 1e-5, "dh");
      check_close(gn, g[1], 1e-5, "norm weight gradient");
      check_close(gw, g[2], 1e-5, "head gradient");
    }
  }
}
