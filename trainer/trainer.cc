// The training loop, read top to bottom: configuration -> tokenizer -> data -> model/engine -> steps ->
// checkpoint. Rank-aware throughout: each rank reads its own rows and only rank 0 prints and saves.
#include "trainer/trainer.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "trainer/diagnostics.h"
#include "trainer/parallel/engine.h"
#include "trainer/metrics.h"
#include "trainer/model/lora_block.h"
#include "trainer/mlflow_logger.h"
#include "trainer/optim/adamw.h"
#include "trainer/sources.h"
#include "trainer/train_data.h"
#include "trainer/preview.h"
#include "trainer/tokenizer/tokenizer.h"

namespace air::train {
namespace fs = std::filesystem;
namespace {

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  try {
    return std::stoll(v);
  } catch (...) {
    throw usage_error(std::string(name) + "='" + v + "' is not an integer");
  }
}

// The special token a tokenizer_config.json names ("eos_token": "<|end_of_text|>" or {"content": ...}).
std::optional<int32_t> special_from_config(const Tokenizer& tok, const fs::path& dir, const char* key) {
  std::ifstream in(dir / "tokenizer_config.json");
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.contains(key)) return std::nullopt;
  const auto& v = j[key];
  std::string text = v.is_string() ? v.get<std::string>() : v.is_object() ? v.value("content", "") : "";
  return text.empty() ? std::nullopt : tok.token_to_id(text);
}

// The encoder holds the tokenizer (shared): the data loading that follows calls it.
TextEncoder make_encoder(std::shared_ptr<const Tokenizer> shared, const std::string& tok_path, const LlamaConfig& mc) {
  const Tokenizer& tok = *shared;
  const fs::path dir = fs::path(tok_path).parent_path();
  TextEncoder enc;
  enc.encode = [shared](const std::string& s) { return shared->encode(s, false); };
  enc.tokenizer = shared;
  enc.bos = tok.bos_id();
  auto eos = special_from_config(tok, dir, "eos_token");
  if (!eos) eos = tok.eos_id();
  if (!eos && !mc.eos_token_ids.empty()) eos = static_cast<int32_t>(mc.eos_token_ids[0]);
  if (!eos) throw Error(tok_path + ": the tokenizer has no end-of-sequence token, and config.json names none");
  enc.eos = *eos;
  auto pad = special_from_config(tok, dir, "pad_token");
  if (!pad) pad = tok.pad_id();
  enc.pad = pad.value_or(enc.eos);  // the reference pads with eos; padding is never a target here
  return enc;
}

at::Device pick_device(const TrainConfig& c, int64_t local_rank) {
  const bool cuda = at::hasCUDA();
  if (c.device == "cuda" && !cuda) throw Error("device: cuda, but this libtorch build or machine has no CUDA GPU");
  if (c.device == "cpu" || !cuda) return at::Device(at::kCPU);
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
}

std::string sharded_dir(const TrainConfig& c) {
  return c.checkpoint_dir.empty() ? (fs::path(c.output_dir) / kShardedSubdir).string() : c.checkpoint_dir;
}

// Restores the newest complete sharded checkpoint (resume: auto) or the one named (resume: <path>), and
// moves the data loader to where it stood. Returns the number of steps already done.
int64_t maybe_resume(const TrainConfig& c, Engine& engine, DataLoader& loader, std::ostream& log) {
  if (c.resume == "never") return 0;
  const bool named = c.resume != "auto";
  const std::string from = named ? c.resume : sharded_dir(c);
  LoopState loop;
  if (!engine.load_sharded(from, loop)) {
    if (named)
      throw Error("resume: no sharded checkpoint in " + from,
                  "name a checkpoint folder (with a `latest` file) or a step folder (with state.json)");
    return 0;
  }
  if (loop.seed != c.seed)
    log << "warning: the checkpoint was trained with seed " << loop.seed << ", this run has seed " << c.seed
        << "; continuing with the checkpoint's data position\n";
  if (loop.step > c.max_steps)
    throw Error("the checkpoint in " + from + " is at step " + std::to_string(loop.step) + ", beyond max_steps " +
                    std::to_string(c.max_steps),
                "raise max_steps, or set resume: never to start over");
  loader.seek({loop.data_epoch, loop.data_cursor});
  log << "resumed from " << find_sharded_checkpoint(from) << " at step " << loop.step << " (data epoch "
      << loop.data_epoch << ", row " << loop.data_cursor << ")\n" << std::flush;
  return loop.step;
}

// Everything the loop needs before its first step: ranks, sources, tokenizer, device and dtypes.
struct Prepared {
  EngineSetup setup;
  std::string tokenizer_path;
};

// The model's config.json and tokenizer, resolved from model_name (local path or hub), checked together.
Prepared prepare(TrainConfig& c, std::ostream& log) {
  Prepared p;
  EngineSetup& s = p.setup;
  s.rank = env_int("RANK", 0);
  s.world_size = env_int("WORLD_SIZE", 1);
  s.local_rank = env_int("LOCAL_RANK", 0);
  log << render_config(c);
  if (auto mapped = map_volumes_path(c.output_dir); mapped != c.output_dir) {
    log << "output_dir " << c.output_dir << " -> " << mapped << " (AIR_VOLUMES_ROOT: this node has no /Volumes)\n";
    c.output_dir = mapped;
  }
  const Source model = resolve_model(c.model_name, &log);
  log << "model source: " << c.model_name << " from " << model.origin << "\n";
  s.model_dir = model.path;
  const std::string config_json = (fs::path(s.model_dir) / "config.json").string();
  s.model_config = load_model_config(config_json);
  check_model_features(c, s.model_config, config_json);
  // all-linear (and the default) name Llama's seven: the family's own modules from here on (Phi-3: its fused
  // qkv_proj and gate_up_proj), for the engine and adapter_config.json.
  if (c.lora.enabled) c.lora.target_modules = lora_family_targets(c.lora, s.model_config, config_json);
  p.tokenizer_path = c.tokenizer_path.empty() ? (fs::path(s.model_dir) / "tokenizer.json").string() : c.tokenizer_path;
  if (!fs::exists(p.tokenizer_path))
    throw Error("no tokenizer at " + p.tokenizer_path, "put tokenizer.json in the model folder or set tokenizer_path");
  s.device = pick_device(c, s.local_rank);
  s.compute_dtype = c.dtype == "bf16" || (c.dtype == "auto" && s.device.is_cuda()) ? at::kBFloat16 : at::kFloat;
  s.master_dtype = c.master_dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  s.config = c;
  const auto& mc = s.model_config;
  log << "model: " << s.model_dir << " | " << mc.model_type << ", " << mc.num_hidden_layers << " layers, hidden " << mc.hidden_size
      << ", heads " << mc.num_attention_heads << "/" << mc.num_key_value_heads << ", vocab " << mc.vocab_size
      << (mc.tie_word_embeddings ? ", tied" : ", untied") << " | " << mc.num_parameters() << " parameters | init "
      << c.init << "\n";
  return p;
}

// The tokenizer's encoder: BOS/EOS/PAD from tokenizer_config.json, the tokenizer or config.json.
TextEncoder load_encoder(const std::string& tokenizer_path, const LlamaConfig& mc, std::ostream& log) {
  auto tok = std::make_shared<const Tokenizer>([&] {
    try {
      return Tokenizer::from_file(tokenizer_path);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(std::string("cannot load tokenizer: ") + e.what());
    }
  }());
  if (tok->vocab_size() > mc.vocab_size)
    throw Error("the tokenizer has " + std::to_string(tok->vocab_size()) + " tokens but the model's vocab_size is " +
                std::to_string(mc.vocab_size));
  TextEncoder enc = make_encoder(tok, tokenizer_path, mc);
  log << "tokenizer: " << tokenizer_path << " | bos " << (enc.bos ? std::to_string(*enc.bos) : "none") << ", eos "
      << enc.eos << ", pad " << enc.pad << "\n";
  return enc;
}

// The examples (trainer/train_data.h) and the step's shape in the log.
TrainData make_data(const TrainConfig& c, const EngineSetup& s, const TextEncoder& enc, const std::string& tokenizer_path,
                    std::ostream& log) {
  TrainData d = load_train_data(c, s.rank, s.world_size, enc, tokenizer_path, log);
  log << "data: " << d.train->rows_per_epoch() << " rows per epoch (";
  if (c.packing)
    log << "packed " << c.packing_strategy << " to " << c.max_seq_len << ", " << std::fixed << std::setprecision(1)
        << 100.0 * d.train->fill() << "% of positions hold tokens" << std::defaultfloat << std::setprecision(6) << "), ";
  else
    log << "padded to " << c.max_seq_len << "), ";
  log  << d.train->rows_per_step() << " rows per step = " << s.world_size << " ranks x "
      << c.per_device_batch_size << " x " << c.gradient_accumulation_steps << " accumulation\n";
  return d;
}

// One optimizer step: every micro-batch forward and backward, clip, AdamW; the step's loss and norm.
StepMetrics train_step(Engine& engine, const TrainConfig& c, const EngineSetup& s, const StepBatch& batch,
                       int64_t step) {
  synchronize(s.device);
  auto t0 = std::chrono::steady_clock::now();
  const double scale = 1.0 / static_cast<double>(std::max<int64_t>(1, batch.global_target_tokens));
  at::Tensor loss = at::zeros({}, at::TensorOptions().device(s.device).dtype(at::kFloat));
  for (const auto& mb : batch.micro) loss = loss + engine.forward_backward(mb, scale);
  at::Tensor norm = engine.clip_grad_norm(c.grad_clip);
  const double lr = lr_at(c, step);
  engine.optimizer_step(lr);
  engine.zero_grad();
  loss = engine.all_reduce_sum(loss) * scale;
  StepMetrics m;
  m.loss = loss.item<double>();  // waits for the step's work
  m.grad_norm = norm.item<double>();
  synchronize(s.device);
  m.step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.step = step;
  m.max_steps = c.max_steps;
  m.epoch = batch.epoch;
  m.lr = lr;
  m.padded_tokens = batch.global_rows * c.max_seq_len;
  m.real_tokens = batch.global_real_tokens;
  m.target_tokens = batch.global_target_tokens;
  m.flops_per_token = s.model_config.train_flops_per_token(c.max_seq_len);
  // LoRA computes no weight gradients for the frozen base: 4N, not 6N (the adapters' FLOPs are negligible).
  if (c.lora.enabled) m.flops_per_token -= 2.0 * static_cast<double>(s.model_config.num_parameters());
  m.world_size = s.world_size;
  m.peak_memory_gib = peak_memory_gib(s.device);
  return m;
}

// Where a step's figures go: the log a person watches (one readable line per logged step), the metrics file
// (one JSON line per logged step and evaluation, for scripts) and MLflow (every step, rank 0). The JSON is not
// in the log unless asked for: `metrics_file: "-"` writes it there, after each readable line (docs/trainer.md).
class StepReporter {
 public:
  StepReporter(const TrainConfig& c, int64_t rank, std::ostream& log) : c_(c), log_(log) {
    if (c.metrics_file == "-" && rank == 0) {
      metrics_ = &log;
    } else if (!c.metrics_file.empty() && rank == 0) {
      metrics_file_.open(c.metrics_file, std::ios::app);
      if (!metrics_file_.is_open())
        throw usage_error("metrics_file: cannot open '" + c.metrics_file + "' for appending: " + std::strerror(errno),
                          "give a writable path (its folder must exist), or \"-\" for the log itself");
      metrics_ = &metrics_file_;
    }
    // MLflow from rank 0 only (MLFLOW_TRACKING_URI + MLFLOW_RUN_ID); never blocks the loop.
    if (rank == 0) mlflow_ = MlflowLogger::from_environment(std::cerr);
    if (mlflow_) log << "mlflow: logging loss, lr, grad_norm, tokens/s, MFU, peak memory to run " << std::getenv("MLFLOW_RUN_ID") << "\n";
  }
  void report(const StepMetrics& m) {
    if (mlflow_) {
      // Every figure of the step line, so the run page charts MFU and memory beside the system metrics.
      std::vector<std::pair<std::string, double>> figures = {{"loss", m.loss},
                                                             {"lr", m.lr},
                                                             {"grad_norm", m.grad_norm},
                                                             {"tokens_per_s", m.padded_tokens_per_s()},
                                                             {"real_tokens_per_s", m.real_tokens_per_s()},
                                                             {"step_time_s", m.step_seconds},
                                                             {"mfu", m.mfu()}};
      if (m.peak_memory_gib >= 0) figures.emplace_back("peak_memory_gib", m.peak_memory_gib);
      mlflow_->log_step(m.step, figures);
    }
    if (m.step % c_.log_every == 0 || m.step == c_.max_steps || m.step == 1) {
      log_ << human_line(m) << "\n" << std::flush;
      if (metrics_) *metrics_ << json_line(m) << "\n" << std::flush;
    }
  }
  void report_eval(int64_t step, const EvalResult& r) {
    if (mlflow_) mlflow_->log_step(step, {{"eval_loss", r.loss}, {"eval_perplexity", r.perplexity}});
    const std::string line = eval_json_line(step, r);
    log_ << "eval step " << step << " | eval_loss " << r.loss << " | perplexity " << r.perplexity << " | " << r.tokens
         << " tokens\n" << std::flush;
    if (metrics_) *metrics_ << line << "\n" << std::flush;
  }

 private:
  const TrainConfig& c_;
  std::ostream& log_;
  std::ofstream metrics_file_;
  std::ostream* metrics_ = nullptr;  // metrics_file_, the log ("-"), or none
  std::unique_ptr<MlflowLogger> mlflow_;
};

}  // namespace

TextEncoder load_text_encoder(const std::string& tokenizer_path, const std::string& model_dir, std::ostream& log) {
  return load_encoder(tokenizer_path, load_llama_config((fs::path(model_dir) / "config.json").string()), log);
}

TrainResult run_training(TrainConfig c, std::ostream& out, const EngineFactory& make_engine) {
  validate(c);
  // Rank 0 and the first rank of every other node print, so each node's log shows the (global) loss.
  std::ostringstream sink;
  const bool prints = env_int("RANK", 0) == 0 || env_int("LOCAL_RANK", 0) == 0;
  std::ostream& log = prints ? out : sink;

  Prepared p = prepare(c, log);
  const EngineSetup& s = p.setup;
  StepReporter reporter(c, s.rank, log);  // first: an unwritable metrics_file fails before the data and the model load
  TextEncoder enc = load_encoder(p.tokenizer_path, s.model_config, log);
  TrainData data = make_data(c, s, enc, p.tokenizer_path, log);
  DataLoader& loader = *data.train;
  const std::vector<MicroBatch> eval = eval_batches(data.eval, data.options, c.eval_max_batches);
  if (!eval.empty())
    log << "eval: " << data.eval.size() << " examples, " << eval.size() << " micro-batches per rank, "
        << (c.eval_every_steps > 0 ? "every " + std::to_string(c.eval_every_steps) + " steps and " : "") << "after the last step\n";
  SaveOptions save{c.output_dir,
                   c.save_dtype == "bf16" || (c.save_dtype == "auto" && s.compute_dtype == at::kBFloat16) ? at::kBFloat16
                                                                                                           : at::kFloat,
                   parse_size(c.max_shard_size), s.model_dir, p.tokenizer_path, c.chat_template};
  if (c.save && s.rank == 0) check_output_dir(c.output_dir);

  auto engine = make_engine ? make_engine(s) : c.lora.enabled ? make_lora_engine(s) : make_fsdp_engine(s);
  log << "engine: " << engine->describe() << "\n" << std::flush;

  TrainResult result;
  result.first_step = maybe_resume(c, *engine, loader, log) + 1;
  reset_peak_memory(s.device);
  const int64_t exit_after = env_int("AIR_TRAIN_EXIT_AFTER_STEP", 0);  // fault injection for the resume tests
  StepTracer tracer(s.rank, log);  // AIR_TRAIN_TRACE, AIR_TRAIN_DUMP_BATCHES: trainer/diagnostics.h
  BatchDump dump(s.rank);
  for (int64_t step = result.first_step; step <= c.max_steps; ++step) {
    StepBatch batch = loader.next();
    tracer.begin(step);
    for (const auto& mb : batch.micro) dump.write(step, mb);
    StepMetrics m = train_step(*engine, c, s, batch, step);
    tracer.end(step);
    reporter.report(m);
    result.losses.push_back(m.loss);
    result.grad_norms.push_back(m.grad_norm);
    if (step == result.first_step)
      if (std::string note = engine->after_first_step(); !note.empty()) log << note << "\n";
    if (!eval.empty() && ((c.eval_every_steps > 0 && step % c.eval_every_steps == 0) || step == c.max_steps)) {
      EvalResult r = evaluate(*engine, eval, s.device);
      reporter.report_eval(step, r);
      result.eval_losses.push_back(r.loss);
    }
    if (c.checkpoint_every_steps > 0 && (step % c.checkpoint_every_steps == 0 || step == c.max_steps)) {
      const auto pos = loader.position();
      engine->save_sharded(sharded_dir(c), {step, pos.epoch, pos.cursor, c.seed});
      log << "saved sharded checkpoint " << step << " to " << sharded_dir(c) << "\n" << std::flush;
    }
    if (step == exit_after) {
      log << "exiting after step " << step << " (AIR_TRAIN_EXIT_AFTER_STEP)\n" << std::flush;
      std::_Exit(3);
    }
  }
  if (c.save) {
    engine->save(save);
    if (s.rank == 0) {
      result.checkpoint_dir = c.output_dir;
      log << "saved checkpoint to " << fs::absolute(c.output_dir).lexically_normal().string() << "\n";
    }
  }
  return result;
}

int train_main(int argc, char** argv) {
  try {
    TrainConfig c;
    std::string config_path;
    std::vector<std::string> sets;
    bool print_only = false;
    int64_t preview = -1;  // --preview-data N
    std::string output = "text";
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&](const std::string& flag) -> std::string {
        if (i + 1 >= argc) throw usage_error(flag + " needs a value");
        return argv[++i];
      };
      if (a == "-h" || a == "--help") {
        std::cout << "usage: air-train [--config FILE] [--set key=value]... [--print-config] [--preview-data N [-o json]]\n"
                     "Reads settings from --config FILE, else the YAML at $HYPERPARAMETERS_PATH.\n"
                     "--preview-data N prints the first N records as they will be trained (tokenizer files only).\n\nsettings:\n";
        for (const auto& [k, help] : config_keys()) std::cout << "  " << k << ": " << help << "\n";
        return 0;
      } else if (a == "--config") {
        config_path = value(a);
      } else if (a.rfind("--config=", 0) == 0) {
        config_path = a.substr(9);
      } else if (a == "--set") {
        sets.push_back(value(a));
      } else if (a.rfind("--set=", 0) == 0) {
        sets.push_back(a.substr(6));
      } else if (a == "--print-config") {
        print_only = true;
      } else if (a == "--preview-data" || a.rfind("--preview-data=", 0) == 0) {
        const std::string v = a == "--preview-data" ? value(a) : a.substr(15);
        try {
          preview = std::stoll(v);
        } catch (...) {
          preview = -1;
        }
        if (preview < 1) throw usage_error("--preview-data expects a number of records (1 or more), got '" + v + "'");
      } else if (a == "-o" || a == "--output" || a.rfind("--output=", 0) == 0) {
        output = a.rfind("--output=", 0) == 0 ? a.substr(9) : value(a);
        if (output != "json" && output != "text") throw usage_error("-o expects json or text, got '" + output + "'");
      } else {
        throw usage_error("unknown argument '" + a + "'", "see air-train --help");
      }
    }
    if (config_path.empty())
      if (const char* hp = std::getenv("HYPERPARAMETERS_PATH"); hp && *hp) config_path = hp;
    if (!config_path.empty()) {
      std::ifstream in(config_path);
      if (!in) throw usage_error("cannot read configuration " + config_path);
      std::stringstream ss;
      ss << in.rdbuf();
      apply_yaml(c, ss.str(), config_path);
    }
    for (const auto& s : sets) apply_override(c, s);
    if (print_only) {
      validate(c);
      std::cout << render_config(c);
      return 0;
    }
    if (preview > 0) {
      PreviewOptions po;
      po.records = preview;
      po.json = output == "json";
      const char* no_color = std::getenv("NO_COLOR");
      po.color = !po.json && isatty(1) && !(no_color && *no_color);
      // stdout holds the records alone; where the tokenizer and data came from goes to stderr.
      return preview_data(c, po, std::cout, std::cerr);
    }
    run_training(c, std::cout);
    return 0;
  } catch (const Error& e) {
    std::cout << std::flush;
    const std::string m = e.what();
    // Located configuration errors arrive already rendered (file:line:col: error: ...).
    std::cerr << (m.find(": error: ") != std::string::npos ? "" : "air-train: error: ") << m << "\n";
    if (!e.hint().empty()) std::cerr << "  hint: " << e.hint() << "\n";
    return e.exit_code();
  } catch (const c10::Error& e) {  // libtorch's own (out of memory, device errors): no C++ backtrace
    std::cout << std::flush;
    std::cerr << "air-train: error: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cout << std::flush;
    std::cerr << "air-train: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace air::train
