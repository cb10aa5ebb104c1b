// Writing the consolidated checkpoint atomically: temp folder, fsync'd files, then rename over output_dir.
#include "trainer/checkpoint/hf_checkpoint.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "trainer/model/model.h"

namespace air::train {
namespace fs = std::filesystem;
namespace {

// An earlier checkpoint (ours or transformers') may be replaced; anything else is the user's and is not.
bool replaceable(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return true;
  if (!fs::is_directory(dir, ec)) return false;
  if (fs::is_empty(dir, ec)) return true;
  if (fs::exists(dir / "config.json", ec) || fs::exists(dir / "adapter_config.json", ec)) return true;  // or a LoRA adapter
  // Only the sharded checkpoints of an attempt that did not finish.
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename() != kShardedSubdir) return false;
  return !ec;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  out.flush();
  if (!out) throw Error("cannot write " + p.string());
}

void copy_if_exists(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (!fs::is_regular_file(from, ec)) return;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) throw Error("cannot copy " + from.string() + " to " + to.string() + ": " + ec.message());
}

// The trained-with template (chat_template:) in place of the tokenizer's: chat_template.jinja, and
// tokenizer_config.json's chat_template (a string; a list of named templates gets its "default" replaced).
void save_chat_template(const fs::path& file, const fs::path& dir) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot read the chat template " + file.string() + " to save it with the checkpoint");
  std::stringstream text;
  text << in.rdbuf();
  write_text(dir / "chat_template.jinja", text.str());
  nlohmann::json cfg = nlohmann::json::object();
  if (std::ifstream cin(dir / "tokenizer_config.json"); cin) {
    cfg = nlohmann::json::parse(cin, nullptr, false);
    if (cfg.is_discarded() || !cfg.is_object()) return;  // not ours to repair; chat_template.jinja is written
  }
  nlohmann::json& t = cfg["chat_template"];
  if (t.is_array()) {
    for (auto& e : t)
      if (e.is_object() && e.value("name", "") == "default") e["template"] = text.str();
  } else {
    t = text.str();
  }
  write_text(dir / "tokenizer_config.json", cfg.dump(2) + "\n");
}

std::string dtype_name(at::ScalarType t) { return t == at::kBFloat16 ? "bfloat16" : t == at::kHalf ? "float16" : "float32"; }

}  // namespace

std::string map_volumes_path(const std::string& path) {
  const char* root = std::getenv("AIR_VOLUMES_ROOT");
  if (!root || !*root || path.rfind("/Volumes/", 0) != 0) return path;
  std::error_code ec;
  if (fs::exists("/Volumes", ec)) return path;
  return (fs::path(root) / path.substr(std::string("/Volumes/").size())).string();
}

void check_output_dir(const std::string& output_dir) {
  fs::path dir(output_dir);
  if (!replaceable(dir))
    throw Error("output_dir " + output_dir + " exists and is not an earlier checkpoint (no config.json or adapter_config.json)",
                "air-train replaces only an empty folder or an earlier checkpoint; choose another output_dir");
  std::error_code ec;
  fs::path parent = fs::absolute(dir, ec).parent_path();
  fs::create_directories(parent, ec);
  if (ec || ::access(parent.c_str(), W_OK) != 0)
    throw Error("cannot write the checkpoint's parent folder " + parent.string() + (ec ? ": " + ec.message() : ""));
}

std::vector<TensorSpec> checkpoint_specs(const LlamaConfig& c, at::ScalarType dtype) {
  std::vector<TensorSpec> s;
  s.push_back({"model.embed_tokens.weight", dtype, {c.vocab_size, c.hidden_size}});
  const auto block = checkpoint_block_tensors(c);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (const auto& [name, shape] : block) s.push_back({LlamaModel::block_param_name(l, name), dtype, shape});
  s.push_back({"model.norm.weight", dtype, {c.hidden_size}});
  if (!c.tie_word_embeddings) s.push_back({"lm_head.weight", dtype, {c.vocab_size, c.hidden_size}});
  return s;
}

std::vector<std::string> checkpoint_write_order(const LlamaConfig& c) {
  std::vector<std::string> out = {"model.embed_tokens.weight"};
  const auto names = BlockWeights::names(c);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l)
    for (const auto& n : names) out.push_back(LlamaModel::block_param_name(l, n));
  out.push_back("model.norm.weight");
  if (!c.tie_word_embeddings) out.push_back("lm_head.weight");
  return out;
}

CheckpointSaver::CheckpointSaver(const LlamaConfig& c, SaveOptions o) : config_(c), o_(std::move(o)) {
  check_output_dir(o_.output_dir);
  fs::path out = fs::absolute(o_.output_dir);
  if (out.filename().empty()) out = out.parent_path();
  o_.output_dir = out.string();
  tmp_ = (out.parent_path() / ("." + out.filename().string() + ".tmp-" + std::to_string(::getpid()))).string();
  std::error_code ec;
  fs::remove_all(tmp_, ec);
  if (!fs::create_directories(tmp_, ec)) throw Error("cannot create " + tmp_ + (ec ? ": " + ec.message() : ""));
  fs::path t(tmp_), src(o_.source_model_dir);
  write_text(t / "config.json", llama_config_to_json(c, dtype_name(o_.dtype)).dump(2) + "\n");
  if (fs::exists(src / "generation_config.json")) {
    copy_if_exists(src / "generation_config.json", t / "generation_config.json");
  } else {
    nlohmann::json g = {{"_from_model_config", true}};
    if (!c.bos_token_ids.empty()) g["bos_token_id"] = c.bos_token_ids[0];
    if (c.eos_token_ids.size() == 1) g["eos_token_id"] = c.eos_token_ids[0];
    else if (!c.eos_token_ids.empty()) g["eos_token_id"] = c.eos_token_ids;
    write_text(t / "generation_config.json", g.dump(2) + "\n");
  }
  if (!o_.tokenizer_path.empty()) {
    copy_if_exists(o_.tokenizer_path, t / "tokenizer.json");
    fs::path tdir = fs::path(o_.tokenizer_path).parent_path();
    // chat_template.jinja too: a chat model is served with the template it was trained with.
    for (const char* f : {"tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"})
      copy_if_exists(fs::exists(tdir / f) ? tdir / f : src / f, t / f);
  }
  if (!o_.chat_template_file.empty()) save_chat_template(o_.chat_template_file, t);
  specs_ = checkpoint_specs(c, o_.dtype);
  order_ = checkpoint_write_order(c);
  writer_ = std::make_unique<ShardedWriter>(tmp_, specs_, o_.max_shard_bytes);
}

CheckpointSaver::~CheckpointSaver() {
  writer_.reset();
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
}

void CheckpointSaver::write(const std::string& name, const at::Tensor& t) {
  const std::string layers = "model.layers.";
  if (!config_.fused_checkpoint || name.rfind(layers, 0) != 0) {
    writer_->write(name, t);
    return;
  }
  const size_t dot = name.find('.', layers.size());
  const CheckpointSlot slot = checkpoint_slot(config_, name.substr(dot + 1));
  if (!slot.rows) {
    writer_->write(name, t);
    return;
  }
  const std::string file_name = name.substr(0, dot + 1) + slot.suffix;
  Fused& f = fused_[file_name];
  if (!f.t.defined()) {
    for (const auto& sp : specs_)
      if (sp.name == file_name) f.t = at::empty(sp.shape, at::TensorOptions().dtype(sp.dtype));
    if (!f.t.defined()) throw Error("checkpoint writer: no tensor " + file_name + " in the checkpoint's layout");
  }
  f.t.narrow(0, slot.row, slot.rows).copy_(t.detach().to(at::kCPU));
  f.filled += slot.rows;
  if (f.filled == f.t.size(0)) {
    writer_->write(file_name, f.t);
    fused_.erase(file_name);
  }
}

void CheckpointSaver::commit() {
  writer_->finish();
  writer_.reset();
  fs::path out(o_.output_dir);
  std::error_code ec;
  fs::path old;
  if (fs::exists(out, ec)) {
    if (!replaceable(out)) throw Error("output_dir " + o_.output_dir + " changed during training; the new checkpoint is in " + tmp_);
    old = out.parent_path() / ("." + out.filename().string() + ".old-" + std::to_string(::getpid()));
    fs::remove_all(old, ec);
    // The sharded checkpoints move into the new folder first (one rename), so they are never lost.
    if (fs::exists(out / kShardedSubdir, ec)) {
      fs::rename(out / kShardedSubdir, fs::path(tmp_) / kShardedSubdir, ec);
      if (ec) throw Error("cannot move " + (out / kShardedSubdir).string() + " into the new checkpoint: " + ec.message());
    }
    fs::rename(out, old, ec);
    if (ec) throw Error("cannot move the earlier checkpoint aside: " + ec.message(), "the new checkpoint is in " + tmp_);
  }
  fs::rename(tmp_, out, ec);
  if (ec) throw Error("cannot rename " + tmp_ + " to " + o_.output_dir + ": " + ec.message());
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

void save_checkpoint(const LlamaModel& m, const SaveOptions& o) {
  CheckpointSaver saver(m.config(), o);
  std::map<std::string, at::Tensor> params;
  for (const auto& [name, t] : m.named_parameters()) params[name] = t;
  for (const auto& name : saver.order()) saver.write(name, params.at(name));
  saver.commit();
}

}  // namespace air::train
