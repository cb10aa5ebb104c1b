// bf16 GEMMs through cuBLASLt for the shapes where ATen's at::mm / at::addmm leave time on the table
// (trainer/model/gemm.h says which and calls this; its ATen path is the reference):
// - D = A B + C with C not D (a residual added inside the GEMM; at::addmm first copies C into the output). Not
//   used by the blocks today: at the 8B block's shapes the algorithms picked measured 2.6 ms a step slower than
//   cuBLAS's copy + GEMM (docs/performance.md), so the residual forwards stay on ATen;
// - LoRA's thin GEMMs (16 to 48 columns, or a reduction over all tokens into an [r, in] gradient), for which
//   cuBLAS picks split-K kernels with a memset and a reduction launch each: here the algorithm is chosen once
//   per shape by timing the heuristic's candidates, with and without a split-K workspace;
// - LoRA's frozen-base GEMMs (folded layouts, rows aligned to 64 elements), where the timed choice beat
//   cuBLAS's heuristic by 5-21% at some of the 8B block's shapes (air-train-check --gemm-speed).
// ATen's own GEMM is timed beside the candidates: where it is the fastest, gemm_lt returns false for that shape
// from then on, and the caller runs ATen.
// Built only in the CUDA build (AIR_TRAIN_CUDA_KERNELS). cuBLASLt is the library libtorch already loaded; its
// functions are looked up at run time (no link against a second copy of it).
#pragma once
#include <ATen/ATen.h>

namespace air::train::ops::cuda {

// How gemm_lt picks its algorithm: the heuristic's first (with a workspace, as ATen), or the fastest of its
// candidates timed once per shape. AIR_TRAIN_GEMM_TUNE=0 selects the first.
enum class GemmPick { heuristic, tuned };

// d = alpha * a @ b + beta * c. a [M, K], b [K, N], c and d [M, N], all bf16 on one CUDA device, 2-D, each with
// a unit stride along rows or columns (d and c along columns); c may be d (in place), or undefined (beta is
// then 0). Returns false, having done nothing, where the layout is not one it takes, cuBLASLt is missing or
// ATen's GEMM timed faster at this shape: the caller then runs ATen.
bool gemm_lt(const at::Tensor& d, const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, float alpha,
             float beta, GemmPick pick);

}  // namespace air::train::ops::cuda
