// Loading the training and eval examples, their micro-batches, and the eval pass.
#include "trainer/train_data.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "trainer/data/cache.h"
#include "trainer/data/mixture.h"
#include "trainer/parallel/engine.h"
#include "trainer/sources.h"

namespace air::train {
namespace fs = std::filesystem;
namespace {

CachedData load_source(const TrainConfig& c, const Source& src, const DataSettings& settings, const ExampleBuilder& b,
                       const std::string& tokenizer_path, int64_t rank, std::ostream& log) {
  return load_examples_cached(src.files, settings, b, cache_settings(c.data_cache_dir, tokenizer_path, rank), log);
}

// eval_dataset: a bare split name ("validation", "test") of dataset_name, else a dataset of its own whose
// validation, then test, then train split is read.
Source resolve_eval(const TrainConfig& c, std::ostream& log) {
  std::error_code ec;
  const std::string& e = c.eval_dataset;
  if (e.find('/') == std::string::npos && !fs::exists(e, ec)) {
    if (!c.datasets.empty())
      throw Error("eval_dataset '" + e + "' is a split name, and with datasets: there is no one dataset_name to take it from",
                  "set eval_dataset to a file, folder or hub dataset, or use eval_split_ratio");
    return resolve_dataset(c.dataset_name, e, &log);
  }
  if (fs::exists(e, ec)) return resolve_dataset(e, "train", &log);
  std::string tried;
  for (const char* split : {"validation", "test", "train"}) {
    try {
      return resolve_dataset(e, split, &log);
    } catch (const Error& err) {
      tried += std::string(tried.empty() ? "" : "; ") + err.what();
    }
  }
  throw Error("eval_dataset " + e + ": no validation, test or train split (" + tried + ")");
}

// eval_split_ratio: a shuffle of the example indices by `shuffle_seed`, the first ratio * n (at least one)
// are eval. Both sides become views of the same (mapped) examples: index lists, in example order.
ExampleSet hold_out(ExampleSet& train, double ratio, uint64_t shuffle_seed, const std::string& name, int64_t seed,
                    std::ostream& log) {
  const size_t n = train.size();
  const size_t k = std::max<size_t>(1, static_cast<size_t>(std::llround(ratio * static_cast<double>(n))));
  if (k >= n) throw Error("eval_split_ratio " + std::to_string(ratio) + " leaves no training examples of " + std::to_string(n) + " in " + name);
  std::vector<uint32_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = static_cast<uint32_t>(i);
  seeded_shuffle(idx, shuffle_seed);
  std::vector<uint8_t> is_eval(n, 0);
  for (size_t i = 0; i < k; ++i) is_eval[idx[i]] = 1;
  std::vector<uint32_t> eval_idx, kept;
  eval_idx.reserve(k);
  kept.reserve(n - k);
  for (size_t i = 0; i < n; ++i) (is_eval[i] ? eval_idx : kept).push_back(static_cast<uint32_t>(i));
  ExampleSet eval = train.select(std::move(eval_idx));
  train = train.select(std::move(kept));
  log << "eval: " << k << " examples held out of " << n << " (eval_split_ratio " << ratio << ", seed " << seed << ")\n";
  return eval;
}

}  // namespace

DataSettings data_settings(const TrainConfig& c) {
  DataSettings s;
  s.format = parse_format(c.dataset_format).value_or(DataFormat::kAuto);
  s.skip_bad = c.bad_records == "skip";
  s.train_on = parse_train_on(c.train_on).value_or(TrainOn::kAssistant);
  s.max_seq_len = c.max_seq_len;
  s.max_examples = c.max_examples;
  s.progress = ::isatty(STDERR_FILENO) != 0;  // quiet in logs and pipes
  return s;
}

std::optional<ChatTemplate> load_chat_template(const TrainConfig& c, const std::string& tokenizer_dir) {
  std::optional<std::string> date;
  if (!c.chat_template_date.empty()) date = c.chat_template_date;
  return ChatTemplate::load(tokenizer_dir, c.chat_template, date);
}

TrainData load_train_data(const TrainConfig& c, int64_t rank, int64_t world_size, const TextEncoder& enc,
                          const std::string& tokenizer_path, std::ostream& log) {
  const DataSettings settings = data_settings(c);
  const std::string tokenizer_dir = fs::path(tokenizer_path).parent_path().string();
  std::optional<ChatTemplate> tmpl = load_chat_template(c, tokenizer_dir);
  if (tmpl)
    log << "chat template: " << tmpl->origin() << (tmpl->has_generation_blocks() ? " ({% generation %} blocks)" : "")
        << ", train_on " << c.train_on << "\n";
  ExampleBuilder builder(enc, tmpl ? &*tmpl : nullptr, settings.train_on);

  TrainData out;
  CachedData train;
  if (c.datasets.empty()) {
    const Source data = resolve_dataset(c.dataset_name, "train", &log);
    log << "dataset: " << c.dataset_name << " from " << data.origin << "\n";
    train = load_source(c, data, settings, builder, tokenizer_path, rank, log);
    if (train.examples.empty()) throw Error("dataset " + c.dataset_name + " has no usable records");
    log << describe(train.stats, c.max_seq_len) << "\n";
    if (c.eval_dataset.empty() && c.eval_split_ratio > 0)
      out.eval = hold_out(train.examples, c.eval_split_ratio, static_cast<uint64_t>(c.seed) * 7919ull + 17, c.dataset_name, c.seed, log);
  } else {
    // A mixture (trainer/data/mixture.h): each dataset read, tokenized and cached on its own, with its own
    // format and split; eval_split_ratio holds out of each one before mixing, so no example is in both.
    std::vector<MixturePart> parts;
    std::vector<ExampleSet> held;
    for (size_t i = 0; i < c.datasets.size(); ++i) {
      const DatasetSpec& d = c.datasets[i];
      DataSettings ds = settings;
      if (!d.format.empty()) ds.format = parse_format(d.format).value_or(DataFormat::kAuto);
      const Source data = resolve_dataset(d.name, d.split, &log);
      log << "dataset " << i + 1 << ": " << d.name << (d.split == "train" ? "" : " (" + d.split + ")") << " from " << data.origin << "\n";
      CachedData part = load_source(c, data, ds, builder, tokenizer_path, rank, log);
      log << describe(part.stats, c.max_seq_len) << "\n";
      if (part.examples.empty()) throw Error("dataset " + d.name + " has no usable records", "remove it from datasets:, or fix its records");
      if (c.eval_dataset.empty() && c.eval_split_ratio > 0)
        held.push_back(hold_out(part.examples, c.eval_split_ratio, static_cast<uint64_t>(c.seed) * 7919ull + 17 + i, d.name, c.seed, log));
      parts.push_back({d.name, std::move(part.examples), d.weight});
    }
    Mixture m = mix_datasets(parts, static_cast<uint64_t>(c.seed));
    log << m.describe << "\n";
    train.examples = std::move(m.examples);
    if (!held.empty()) out.eval = ExampleSet::concat(held);
  }
  if (!c.eval_dataset.empty()) {
    const Source ev = resolve_eval(c, log);
    log << "eval dataset: " << c.eval_dataset << " from " << ev.origin << "\n";
    DataSettings es = settings;
    es.max_examples = 0;
    CachedData loaded = load_source(c, ev, es, builder, tokenizer_path, rank, log);
    log << "eval " << describe(loaded.stats, c.max_seq_len) << "\n";
    out.eval = std::move(loaded.examples);
  }
  DataOptions dopt{c.max_seq_len, c.per_device_batch_size, c.gradient_accumulation_steps, rank, world_size,
                   c.packing, static_cast<uint64_t>(c.seed), enc.pad, c.packing_strategy == "bfd"};
  out.train = std::make_unique<DataLoader>(std::move(train.examples), dopt);
  out.options = dopt;
  return out;
}

std::vector<MicroBatch> eval_batches(const ExampleSet& eval, const DataOptions& o, int64_t max_batches) {
  if (eval.empty()) return {};
  DataOptions eo = o;
  eo.grad_accum = 1;
  DataLoader loader(eval, eo);  // rows of epoch 0: every example once (packed or one per row)
  const int64_t rows = loader.rows_per_epoch(), per_batch = o.world_size * o.micro_batch_size;
  int64_t batches = (rows + per_batch - 1) / per_batch;
  if (max_batches > 0) batches = std::min(batches, max_batches);
  std::vector<MicroBatch> out;
  for (int64_t m = 0; m < batches; ++m) {
    std::vector<int64_t> mine;
    for (int64_t b = 0; b < o.micro_batch_size; ++b) mine.push_back(m * per_batch + o.rank * o.micro_batch_size + b);
    out.push_back(loader.materialize_rows(mine));
  }
  return out;
}

EvalResult evaluate(Engine& engine, const std::vector<MicroBatch>& batches, const at::Device& device) {
  // The forward alone (Engine::forward_loss: no backward in the FSDP and LoRA engines; an engine without its
  // own runs its one pass with a zero loss scale, whose zero gradients are cleared after).
  double local_sum = 0, local_count = 0;
  engine.zero_grad();
  for (const auto& mb : batches) {
    local_sum += engine.forward_loss(mb).item<double>();
    local_count += static_cast<double>(mb.target_tokens);
  }
  engine.zero_grad();
  at::Tensor both = at::tensor({local_sum, local_count}, at::kDouble).to(at::TensorOptions().device(device).dtype(at::kFloat));
  at::Tensor reduced = engine.all_reduce_sum(both).to(at::kCPU).to(at::kDouble);
  const double total = reduced[0].item<double>(), n = reduced[1].item<double>();
  EvalResult r;
  r.tokens = static_cast<int64_t>(n);
  r.loss = n > 0 ? total / n : 0;
  r.perplexity = std::exp(r.loss);
  return r;
}

std::string eval_json_line(int64_t step, const EvalResult& r) {
  nlohmann::json j = {{"step", step}, {"eval_loss", r.loss}, {"eval_perplexity", r.perplexity}, {"eval_tokens", r.tokens}};
  return j.dump();
}

}  // namespace air::train
