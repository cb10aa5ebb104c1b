// A mixture of datasets (the `datasets:` setting): each dataset's examples, tokenized and cached on their
// own, drawn in proportion to their weights. The mixture has as many examples per epoch as the datasets
// together (N = n_1 + ... + n_k); dataset i gives k_i = round(N * w_i / sum(w)) of them (at least one): all
// of its examples floor(k_i / n_i) times, plus a sample of the rest chosen by seed without repetition.
// Those are fixed for the run; the epoch's order then shuffles them as any dataset (trainer/data/rows.h).
// A small dataset with a large weight is repeated, a large one with a small weight is subsampled - as
// Hugging Face's interleave_datasets(probabilities=...) would draw them. No libtorch (air_data).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/data/example_set.h"

namespace air::train {

struct MixturePart {
  std::string name;
  ExampleSet examples;
  double weight = 1;
};

struct Mixture {
  ExampleSet examples;                // views of the parts' storage (nothing copied)
  std::vector<int64_t> drawn;         // k_i per part
  std::string describe;               // "mixture: a.jsonl 1000 examples, weight 1 -> 500 (50%, 0.5x); ..."
};

// Throws air::Error when a weight is not positive or no part has examples.
Mixture mix_datasets(const std::vector<MixturePart>& parts, uint64_t seed);

}  // namespace air::train
