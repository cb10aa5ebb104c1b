// Reading, overriding, checking and printing TrainConfig. Errors are located (file:line:col, 1-based) and
// all reported at once; a misspelt key gets a did-you-mean hint from edit distance.
#include "trainer/config.h"
#include "trainer/closest.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <sstream>

#include "core/base/error.h"

namespace air::train {
namespace {

struct Field {
  std::string key, help;
  std::function<void(TrainConfig&, const YAML::Node&)> set;  // throws std::string on a bad value
  std::function<std::string(const TrainConfig&)> show;
};

std::string scalar_of(const YAML::Node& n, const char* want) {
  if (!n.IsScalar()) throw std::string(std::string("expected ") + want);
  return n.Scalar();
}

Field str_field(std::string key, std::string help, std::string TrainConfig::*m) {
  return {key, help, [m](TrainConfig& c, const YAML::Node& n) { c.*m = n.IsNull() ? "" : scalar_of(n, "a string"); },
          [m](const TrainConfig& c) { return c.*m; }};
}

Field enum_field(std::string key, std::string help, std::string TrainConfig::*m, std::vector<std::string> choices) {
  return {key, help,
          [m, choices](TrainConfig& c, const YAML::Node& n) {
            std::string v = scalar_of(n, "a string");
            if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
              std::string all;
              for (const auto& ch : choices) all += (all.empty() ? "" : ", ") + ch;
              throw std::string("'" + v + "' is not one of: " + all);
            }
            c.*m = v;
          },
          [m](const TrainConfig& c) { return c.*m; }};
}

Field int_field(std::string key, std::string help, int64_t TrainConfig::*m) {
  return {key, help,
          [m](TrainConfig& c, const YAML::Node& n) {
            std::string s = scalar_of(n, "an integer");
            try {
              size_t used = 0;
              long long v = std::stoll(s, &used);
              if (used != s.size()) throw 0;
              c.*m = v;
            } catch (...) {
              throw std::string("expected an integer, got '" + s + "'");
            }
          },
          [m](const TrainConfig& c) { return std::to_string(c.*m); }};
}

double parse_double(const std::string& s) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) throw 0;
    return v;
  } catch (...) {
    throw std::string("expected a number, got '" + s + "'");
  }
}

std::string fmt_double(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

Field double_field(std::string key, std::string help, double TrainConfig::*m) {
  return {key, help, [m](TrainConfig& c, const YAML::Node& n) { c.*m = parse_double(scalar_of(n, "a number")); },
          [m](const TrainConfig& c) { return fmt_double(c.*m); }};
}

// `datasets:` - a list of {name, format, split, weight} mappings (a bare string is {name}).
Field datasets_field() {
  static const std::vector<std::string> kFormats = {"auto", "alpaca", "messages", "sharegpt", "prompt_completion", "text"};
  return {"datasets",
          "a mixture instead of dataset_name: a list of {name, format, split, weight} (weight: share of the examples)",
          [](TrainConfig& c, const YAML::Node& n) {
            c.datasets.clear();
            if (n.IsNull() || (n.IsScalar() && n.Scalar().empty())) return;
            if (!n.IsSequence()) throw std::string("expected a list of datasets, like [{name: a.jsonl, weight: 2}, {name: b.jsonl}]");
            for (size_t i = 0; i < n.size(); ++i) {
              const YAML::Node& d = n[i];
              const std::string at = "entry " + std::to_string(i + 1) + ": ";
              DatasetSpec spec;
              if (d.IsScalar()) {
                spec.name = d.Scalar();
              } else if (d.IsMap()) {
                for (const auto& kv : d) {
                  const std::string k = kv.first.Scalar();
                  if (!kv.second.IsScalar()) throw std::string(at + "'" + k + "' expects a value, not a list or mapping");
                  const std::string v = kv.second.Scalar();
                  if (k == "name" || k == "path") spec.name = v;
                  else if (k == "split") spec.split = v;
                  else if (k == "format") {
                    if (std::find(kFormats.begin(), kFormats.end(), v) == kFormats.end())
                      throw std::string(at + "format '" + v + "' is not one of: auto, alpaca, messages, sharegpt, prompt_completion, text");
                    spec.format = v;
                  } else if (k == "weight") {
                    try {
                      size_t used = 0;
                      spec.weight = std::stod(v, &used);
                      if (used != v.size()) throw 0;
                    } catch (...) {
                      throw std::string(at + "weight expects a number, got '" + v + "'");
                    }
                    if (!(spec.weight > 0) || !std::isfinite(spec.weight)) throw std::string(at + "weight must be positive, got '" + v + "'");
                  } else {
                    std::string near = closest_choice(k, {"name", "path", "format", "split", "weight"});
                    throw std::string(at + "unknown key '" + k + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)"));
                  }
                }
              } else {
                throw std::string(at + "expected a mapping like {name: a.jsonl, weight: 2}");
              }
              if (spec.name.empty()) throw std::string(at + "'name' is required (a file, folder or hub dataset)");
              c.datasets.push_back(spec);
            }
          },
          [](const TrainConfig& c) {
            std::string out;
            for (const auto& d : c.datasets) {
              std::ostringstream w;
              w << d.weight;
              out += (out.empty() ? "" : ", ") + d.name + " (weight " + w.str() + (d.format.empty() ? "" : ", " + d.format) +
                     (d.split == "train" ? "" : ", split " + d.split) + ")";
            }
            return out;
          }};
}

Field bool_field(std::string key, std::string help, bool TrainConfig::*m) {
  return {key, help,
          [m](TrainConfig& c, const YAML::Node& n) {
            std::string s = scalar_of(n, "true or false");
            if (s == "true" || s == "True" || s == "yes" || s == "on" || s == "1") c.*m = true;
            else if (s == "false" || s == "False" || s == "no" || s == "off" || s == "0") c.*m = false;
            else throw std::string("expected true or false, got '" + s + "'");
          },
          [m](const TrainConfig& c) { return std::string(c.*m ? "true" : "false"); }};
}

const std::vector<Field>& fields() {
  using C = TrainConfig;
  static const std::vector<Field> kFields = {
      str_field("model_name", "model folder (config.json, *.safetensors, tokenizer.json) or hub name", &C::model_name),
      str_field("dataset_name", "records in a .json/.jsonl/.parquet file, folder, or hub dataset (see dataset_format)", &C::dataset_name),
      int_field("max_seq_len", "tokens per row", &C::max_seq_len),
      int_field("per_device_batch_size", "rows per micro-batch on each rank", &C::per_device_batch_size),
      int_field("gradient_accumulation_steps", "micro-batches per optimizer step", &C::gradient_accumulation_steps),
      double_field("learning_rate", "peak learning rate", &C::learning_rate),
      int_field("max_steps", "optimizer steps", &C::max_steps),
      str_field("output_dir", "where rank 0 writes the consolidated checkpoint", &C::output_dir),
      int_field("seed", "initialisation and data-order seed", &C::seed),
      int_field("warmup_steps", "linear warm-up steps", &C::warmup_steps),
      enum_field("lr_schedule", "after warm-up", &C::lr_schedule, {"constant", "cosine"}),
      double_field("min_lr_ratio", "cosine floor as a fraction of learning_rate", &C::min_lr_ratio),
      double_field("weight_decay", "AdamW decoupled weight decay", &C::weight_decay),
      {"betas", "AdamW betas [beta1, beta2]",
       [](C& c, const YAML::Node& n) {
         if (!n.IsSequence() || n.size() != 2) throw std::string("expected a list of two numbers, like [0.9, 0.999]");
         c.betas = {parse_double(scalar_of(n[0], "a number")), parse_double(scalar_of(n[1], "a number"))};
       },
       [](const C& c) { return "[" + fmt_double(c.betas[0]) + ", " + fmt_double(c.betas[1]) + "]"; }},
      double_field("eps", "AdamW epsilon", &C::eps),
      double_field("grad_clip", "max global gradient norm (0: no clipping)", &C::grad_clip),
      enum_field("dtype", "compute dtype", &C::dtype, {"auto", "bf16", "fp32"}),
      enum_field("master_dtype", "parameter, gradient and optimizer-state dtype", &C::master_dtype, {"fp32", "bf16"}),
      enum_field("precision", "block GEMMs: bf16 (the compute dtype) or fp8 (e4m3, current scaling)", &C::precision,
                 {"bf16", "fp8"}),
      enum_field("fp8_scaling", "precision fp8: one scale per tensor (tensorwise) or per row (rowwise)",
                 &C::fp8_scaling, {"tensorwise", "rowwise"}),
      enum_field("device", "where to train", &C::device, {"auto", "cpu", "cuda"}),
      bool_field("packing", "pack several examples per row", &C::packing),
      enum_field("packing_strategy", "packing: best-fit decreasing (tightest rows) or greedy (shuffled order, next fit)",
                 &C::packing_strategy, {"bfd", "greedy"}),
      enum_field("activation_checkpointing",
                 "recompute blocks in backward: auto (as many kept as free memory holds), true (all), false",
                 &C::activation_checkpointing, {"auto", "true", "false"}),
      enum_field("init", "start from the model's weights or from random", &C::init, {"pretrained", "random"}),
      enum_field("fused_adamw", "a fused AdamW pass where available (ours for bf16 on CUDA, else at::_fused_adamw_)", &C::fused_adamw, {"auto", "on", "off"}),
      int_field("log_every", "print metrics every N steps", &C::log_every),
      int_field("max_examples", "use only the first N examples (0: all)", &C::max_examples),
      str_field("tokenizer_path", "tokenizer.json (default: the model's)", &C::tokenizer_path),
      enum_field("dataset_format", "record format of every dataset file (auto: detected per file)", &C::dataset_format,
                 {"auto", "alpaca", "messages", "sharegpt", "prompt_completion", "text"}),
      enum_field("bad_records", "a malformed record: error, or skip it (counted in the log)", &C::bad_records, {"error", "skip"}),
      enum_field("train_on", "trained tokens: every assistant turn, the last one, or all", &C::train_on,
                 {"assistant", "last_assistant", "all"}),
      str_field("chat_template", "Jinja chat template file (default: the tokenizer's)", &C::chat_template),
      str_field("chat_template_date", "the date strftime_now gives the template, e.g. 2026-12-06 (default: today)",
                &C::chat_template_date),
      str_field("eval_dataset", "eval data: a file, folder or hub dataset, or a split of dataset_name (validation, test)",
                &C::eval_dataset),
      double_field("eval_split_ratio", "hold out this fraction of dataset_name for eval (by seed)", &C::eval_split_ratio),
      int_field("eval_every_steps", "evaluate every N steps (0: after the last step only)", &C::eval_every_steps),
      int_field("eval_max_batches", "micro-batches per rank per evaluation (0: all)", &C::eval_max_batches),
      datasets_field(),
      str_field("data_cache_dir", "tokenized-data cache (default: $AIR_DATA_CACHE, else ~/.cache/air/data)", &C::data_cache_dir),
      bool_field("save", "write the checkpoint at the end", &C::save),
      enum_field("save_dtype", "dtype of the saved weights", &C::save_dtype, {"auto", "bf16", "fp32"}),
      str_field("max_shard_size", "shard the saved weights above this size", &C::max_shard_size),
      str_field("metrics_file", "append a JSON line per logged step and evaluation to this file (rank 0)", &C::metrics_file),
      enum_field("engine", "the training engine: fsdp, fully sharded over all ranks (at world size 1 it shards "
                 "nothing); auto is the same", &C::engine, {"auto", "fsdp"}),
      enum_field("grad_sync", "fsdp: reduce-scatter gradients every micro_batch, or once per step", &C::grad_sync,
                 {"micro_batch", "step"}),
      int_field("checkpoint_every_steps", "save a sharded resumable checkpoint every N steps (0: never)",
                &C::checkpoint_every_steps),
      str_field("checkpoint_dir", "where sharded checkpoints go (default: <output_dir>/sharded)", &C::checkpoint_dir),
      str_field("resume", "auto (newest complete checkpoint, if any), never, or a checkpoint folder", &C::resume),
      {"lora", "low-rank adapters on a frozen base: {r, alpha, dropout, target_modules, init, merge, shard_base} (PEFT's names)",
       [](C& c, const YAML::Node& n) { set_lora_yaml(c.lora, n); }, [](const C& c) { return render_lora(c.lora); }},
  };
  return kFields;
}

const Field* find_field(const std::string& key) {
  for (const auto& f : fields())
    if (f.key == key) return &f;
  return nullptr;
}


std::string source_line(const std::string& text, int line0) {
  std::istringstream in(text);
  std::string l;
  for (int i = 0; std::getline(in, l); ++i)
    if (i == line0) return l;
  return "";
}

// GCC form: file:line:col: error: message, the line, a caret, and a hint.
std::string located(const std::string& name, const std::string& text, const YAML::Mark& m, size_t width,
                    const std::string& msg, const std::string& hint) {
  std::string out = name + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": error: " + msg;
  std::string src = source_line(text, m.line);
  if (!src.empty()) {
    out += "\n    " + src + "\n    " + std::string(static_cast<size_t>(std::max(0, m.column)), ' ') + "^" +
           std::string(width > 1 ? width - 1 : 0, '~');
  }
  if (!hint.empty()) out += "\n  hint: " + hint;
  return out;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& config_keys() {
  static const std::vector<std::pair<std::string, std::string>> keys = [] {
    std::vector<std::pair<std::string, std::string>> k;
    for (const auto& f : fields()) k.emplace_back(f.key, f.help);
    return k;
  }();
  return keys;
}

std::string closest_key(const std::string& key) {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& f : fields()) k.push_back(f.key);
    return k;
  }();
  return closest_choice(key, keys);
}

void apply_yaml(TrainConfig& c, const std::string& text, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw usage_error(located(name, text, e.mark, 1, e.msg, ""));
  }
  if (root.IsNull()) return;
  if (!root.IsMap()) throw usage_error(name + ": expected a mapping of settings (key: value)");
  // A workload file (`air run -f train.yaml`): its `parameters:` are the settings (air-train --config
  // train.yaml --preview-data N). Locations stay those of the file.
  if (const YAML::Node& r = root; r["parameters"] && r["parameters"].IsMap() && (r["command"] || r["compute"])) {
    const YAML::Node params = r["parameters"];
    root = params;
  }
  std::vector<std::string> errors;
  std::set<std::string> seen;
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    const YAML::Mark km = kv.first.Mark();
    const Field* f = find_field(key);
    if (!f) {
      std::string near = closest_key(key);
      errors.push_back(located(name, text, km, key.size(), "unknown key '" + key + "'",
                               near.empty() ? "" : "did you mean '" + near + "'?"));
      continue;
    }
    if (!seen.insert(key).second) {
      errors.push_back(located(name, text, km, key.size(), "duplicate key '" + key + "'", ""));
      continue;
    }
    try {
      f->set(c, kv.second);
      c.origin[key] = name + ":" + std::to_string(km.line + 1);
    } catch (const std::string& msg) {
      errors.push_back(located(name, text, kv.second.Mark(), 1, "'" + key + "': " + msg, ""));
    } catch (const LoraYamlError& le) {  // located at the lora sub-key or value itself
      YAML::Mark m;
      m.line = le.line;
      m.column = le.column;
      errors.push_back(located(name, text, m, le.width, le.message, le.hint));
    }
  }
  if (errors.empty()) return;
  std::string all;
  for (size_t i = 0; i < errors.size() && i < 20; ++i) all += (i ? "\n" : "") + errors[i];
  throw usage_error(all + "\nair-train: " + std::to_string(errors.size()) + " error" + (errors.size() > 1 ? "s" : "") +
                    " in " + name + "; nothing was run");
}

void apply_override(TrainConfig& c, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw usage_error("--set expects key=value, got '" + assignment + "'");
  const std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  if (key.rfind("lora.", 0) == 0) {  // one field of the lora block: --set lora.r=8
    YAML::Node n;
    try {
      n = YAML::Load(value);
    } catch (const YAML::Exception&) {
      n = YAML::Node(value);
    }
    try {
      set_lora_key(c.lora, key.substr(5), n);
    } catch (const LoraYamlError& le) {
      throw usage_error("--set " + key + ": " + le.message, le.hint);
    }
    c.origin["lora"] = "--set";
    return;
  }
  const Field* f = find_field(key);
  if (!f) {
    std::string near = closest_key(key);
    throw usage_error("--set: unknown key '" + key + "'", near.empty() ? "" : "did you mean '" + near + "'?");
  }
  YAML::Node n;
  try {
    n = YAML::Load(value);
  } catch (const YAML::Exception&) {
    n = YAML::Node(value);
  }
  if (n.IsNull() && !value.empty()) n = YAML::Node(value);
  try {
    f->set(c, n.IsNull() && key != "lora" && key != "datasets" ? YAML::Node("") : n);
  } catch (const std::string& msg) {
    throw usage_error("--set " + key + ": " + msg);
  } catch (const LoraYamlError& le) {
    throw usage_error("--set " + key + ": " + le.message, le.hint);
  }
  c.origin[key] = "--set";
}

// The chat and eval data settings (kept apart from the rest for readability).
static void validate_data_settings(const TrainConfig& c, std::vector<std::string>& e) {
  if (c.eval_split_ratio < 0 || c.eval_split_ratio >= 1) e.push_back("eval_split_ratio must be within [0, 1)");
  if (c.eval_split_ratio > 0 && !c.eval_dataset.empty()) e.push_back("set eval_dataset or eval_split_ratio, not both");
  if (c.eval_every_steps < 0) e.push_back("eval_every_steps must not be negative (0: after the last step)");
  if (c.eval_max_batches < 0) e.push_back("eval_max_batches must not be negative (0: all)");
}

void validate(const TrainConfig& c) {
  std::vector<std::string> e;
  if (c.model_name.empty()) e.push_back("model_name is required");
  if (c.dataset_name.empty() && c.datasets.empty()) e.push_back("dataset_name (or datasets:) is required");
  if (!c.dataset_name.empty() && !c.datasets.empty()) e.push_back("set dataset_name or datasets:, not both");
  if (c.max_seq_len < 2) e.push_back("max_seq_len must be at least 2");
  if (c.per_device_batch_size < 1) e.push_back("per_device_batch_size must be at least 1");
  if (c.gradient_accumulation_steps < 1) e.push_back("gradient_accumulation_steps must be at least 1");
  if (c.max_steps < 1) e.push_back("max_steps must be at least 1");
  if (!(c.learning_rate > 0)) e.push_back("learning_rate must be positive");
  if (c.warmup_steps < 0) e.push_back("warmup_steps must not be negative");
  if (c.min_lr_ratio < 0 || c.min_lr_ratio > 1) e.push_back("min_lr_ratio must be within [0, 1]");
  if (c.weight_decay < 0) e.push_back("weight_decay must not be negative");
  if (c.betas[0] < 0 || c.betas[0] >= 1 || c.betas[1] < 0 || c.betas[1] >= 1) e.push_back("betas must be within [0, 1)");
  if (!(c.eps > 0)) e.push_back("eps must be positive");
  if (c.grad_clip < 0) e.push_back("grad_clip must not be negative (0 disables clipping)");
  if (c.log_every < 1) e.push_back("log_every must be at least 1");
  if (c.max_examples < 0) e.push_back("max_examples must not be negative");
  if (c.save && c.output_dir.empty()) e.push_back("output_dir is required when save is true");
  if (c.checkpoint_every_steps < 0) e.push_back("checkpoint_every_steps must not be negative (0: never)");
  if (c.checkpoint_every_steps > 0 && c.checkpoint_dir.empty() && c.output_dir.empty())
    e.push_back("checkpoint_every_steps needs checkpoint_dir or output_dir");
  if (c.precision == "fp8" && c.dtype == "fp32")
    e.push_back("precision: fp8 computes in bf16 around its e4m3 GEMMs: use dtype: bf16 or auto (on a CPU, auto "
                "is fp32 and the FP8 GEMMs are emulated)");
  if (c.resume.empty()) e.push_back("resume must be auto, never, or a checkpoint folder");
  validate_data_settings(c, e);
  validate_lora(c.lora, e);
  if (c.lora.enabled && c.precision == "fp8")
    e.push_back("lora with precision: fp8 is not supported: the frozen base computes in the compute dtype (bf16)");
  try {
    parse_size(c.max_shard_size);
  } catch (const Error& err) {
    e.push_back(err.what());
  }
  if (e.empty()) return;
  std::string all;
  for (const auto& m : e) all += (all.empty() ? "" : "\n") + std::string("invalid configuration: ") + m;
  throw usage_error(all, "set it in the YAML at HYPERPARAMETERS_PATH or with --set key=value");
}

std::string render_config(const TrainConfig& c) {
  std::string out = "configuration:\n";
  size_t w = 0;
  for (const auto& f : fields()) w = std::max(w, f.key.size());
  for (const auto& f : fields()) {
    auto it = c.origin.find(f.key);
    std::string v = f.show(c);
    out += "  " + f.key + std::string(w - f.key.size() + 1, ' ') + (v.empty() ? "\"\"" : v) + "  (" +
           (it == c.origin.end() ? "default" : it->second) + ")\n";
  }
  return out;
}

uint64_t parse_size(const std::string& text) {
  static const std::vector<std::pair<std::string, uint64_t>> kUnits = {
      {"GIB", 1ull << 30}, {"MIB", 1ull << 20}, {"KIB", 1ull << 10}, {"GB", 1000000000ull},
      {"MB", 1000000ull},  {"KB", 1000ull},     {"B", 1ull}};
  std::string s;
  for (char ch : text)
    if (ch != ' ') s += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  uint64_t mult = 1;
  for (const auto& [u, m] : kUnits)
    if (s.size() > u.size() && s.compare(s.size() - u.size(), u.size(), u) == 0) {
      s.resize(s.size() - u.size());
      mult = m;
      break;
    }
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used != s.size() || !(v > 0)) throw 0;
    return static_cast<uint64_t>(v * static_cast<double>(mult));
  } catch (...) {
    throw usage_error("max_shard_size: cannot read '" + text + "' as a size (like 5GB or 500MB)");
  }
}

std::string closest_choice(const std::string& word, const std::vector<std::string>& choices) {
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : choices)
    if (size_t d = distance(word, c); d < best_d) best_d = d, best = c;
  return best_d <= std::max<size_t>(2, word.size() / 3) ? best : "";
}

}  // namespace air::train
