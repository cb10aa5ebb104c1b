// The Tokenizer's public face: loading (tokenizer.json, and tokenizer_config.json beside it), encoding
// (encode.cc) and decoding (decode.cc).
#include "trainer/tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "trainer/tokenizer/impl.h"
#include "trainer/tokenizer/unicode.h"

namespace air::train {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error(path + ": read failed");
  return ss.str();
}

void apply_config_token(Tokenizer::Impl& t, const nlohmann::json& config, const char* key,
                        std::optional<int32_t>& slot) {
  auto it = config.find(key);
  if (it == config.end()) return;
  if (it->is_null()) {  // "bos_token": null (Qwen): transformers has none, whatever a well-known name finds
    slot.reset();
    return;
  }
  std::string content;
  if (it->is_string()) {
    content = it->get<std::string>();
  } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    content = (*it)["content"].get<std::string>();
  } else {
    return;
  }
  auto id = t.by_token.find(content);
  if (id == t.by_token.end()) {
    throw std::runtime_error(t.name + ": tokenizer_config.json names " + key + " \"" + content +
                             "\", which is not a token of tokenizer.json");
  }
  slot = id->second;
}

// transformers' Llama/Gemma tokenizers rebuild the post-processor from `add_bos_token` / `add_eos_token`:
// BOS before the text when add_bos_token, EOS after it when add_eos_token. We do the same whenever the config
// has either key (a missing one keeps what tokenizer.json's template does at that end).
void apply_config_template(Tokenizer::Impl& t, const nlohmann::json& config, const std::string& path) {
  auto setting = [&](const char* key) -> std::optional<bool> {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean()) throw std::runtime_error(path + ": " + key + ": expected true or false");
    return it->get<bool>();
  };
  auto end_token = [&](std::optional<bool> on, const std::optional<int32_t>& id, const char* key,
                       std::vector<int32_t>& slot) {
    if (!on) return;
    slot.clear();
    if (!*on) return;
    if (!id) throw std::runtime_error(path + ": " + key + " is true but the tokenizer has no such token");
    slot.push_back(*id);
  };
  end_token(setting("add_bos_token"), t.bos, "add_bos_token", t.template_prefix);
  end_token(setting("add_eos_token"), t.eos, "add_eos_token", t.template_suffix);
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_json_text(const std::string& json_text, const std::string& name) {
  return Tokenizer(load_tokenizer_json(json_text, name));
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  auto impl = load_tokenizer_json(read_file(path), path);
  // Like transformers, let tokenizer_config.json beside the file name the BOS/EOS/PAD tokens.
  auto config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (std::filesystem::is_regular_file(config_path, ec)) {
    nlohmann::json config = nlohmann::json::parse(read_file(config_path.string()), nullptr, false);
    if (config.is_discarded() || !config.is_object()) {
      throw std::runtime_error(config_path.string() + ": not a valid JSON object");
    }
    apply_config_token(*impl, config, "bos_token", impl->bos);
    apply_config_token(*impl, config, "eos_token", impl->eos);
    apply_config_token(*impl, config, "pad_token", impl->pad);
    apply_config_template(*impl, config, config_path.string());
  }
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> out;
  encode_into(*impl_, text, add_bos, out, nullptr);
  return out;
}

Tokenizer::Encoding Tokenizer::encode_with_offsets(std::string_view text, bool add_bos) const {
  Encoding e;
  e.offsets.reserve(text.size() / 3 + 4);
  encode_into(*impl_, text, add_bos, e.ids, &e.offsets);
  return e;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  return decode_ids(*impl_, ids, skip_special);
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->tokens.size()); }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
std::optional<int32_t> Tokenizer::pad_id() const { return impl_->pad; }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  auto it = impl_->by_token.find(std::string(token));
  if (it == impl_->by_token.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  const Impl& t = *impl_;
  if (id < 0 || static_cast<size_t>(id) >= t.present.size() || !t.present[id]) return std::nullopt;
  return t.tokens[id];
}

bool Tokenizer::is_special(int32_t id) const {
  const Impl& t = *impl_;
  return id >= 0 && static_cast<size_t>(id) < t.special.size() && t.special[id];
}

}  // namespace air::train
