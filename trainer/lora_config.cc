// Reading, checking and printing the `lora:` block (trainer/lora_config.h).
#include "trainer/lora_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "trainer/closest.h"

namespace air::train {
namespace {

const std::vector<std::string> kKeys = {"r", "alpha", "dropout", "target_modules", "init", "merge", "shard_base"};

LoraYamlError at(const YAML::Node& n, std::string msg, std::string hint = "", size_t width = 1) {
  LoraYamlError e;
  e.line = n.Mark().line;
  e.column = n.Mark().column;
  e.width = width;
  e.message = std::move(msg);
  e.hint = std::move(hint);
  return e;
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}


std::string nearest(const std::string& word, const std::vector<std::string>& choices) {
  std::string best = closest_choice(word, choices);
  return best.empty() ? "" : "did you mean '" + best + "'?";
}

std::string scalar(const YAML::Node& n, const std::string& path, const char* want) {
  if (!n.IsScalar()) throw at(n, path + ": expected " + want);
  return n.Scalar();
}

double number(const YAML::Node& n, const std::string& path) {
  const std::string s = scalar(n, path, "a number");
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size() && std::isfinite(v)) return v;
  } catch (...) {
  }
  throw at(n, path + ": expected a number, got '" + s + "'");
}

bool boolean(const YAML::Node& n, const std::string& path) {
  const std::string s = scalar(n, path, "true or false");
  if (s == "true" || s == "True" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "False" || s == "no" || s == "off") return false;
  throw at(n, path + ": expected true or false, got '" + s + "'");
}

// Every name a block linear has in some family, in the adapters' canonical order: Llama's seven with Phi-3's
// fused qkv_proj and gate_up_proj beside their parts. Which of them a model has is checked when its
// config.json is read (lora_family_targets, trainer/model/lora_block.h).
const std::vector<std::string>& known_modules() {
  static const std::vector<std::string> k = {"q_proj",    "k_proj",  "v_proj",       "qkv_proj", "o_proj",
                                             "gate_proj", "up_proj", "gate_up_proj", "down_proj"};
  return k;
}

void set_targets(LoraConfig& c, const YAML::Node& n) {
  std::vector<std::string> want;
  auto add = [&](const YAML::Node& item) {
    const std::string name = scalar(item, "lora.target_modules", "a module name or a list of them");
    if (name == "all-linear") {
      want = lora_module_names();
      return;
    }
    const auto& all = known_modules();
    if (std::find(all.begin(), all.end(), name) == all.end()) {
      std::string hint = nearest(name, all);
      throw at(item, "lora.target_modules: '" + name + "' is not a block linear (PEFT's module names)",
               (hint.empty() ? "" : hint + " ") + "expected some of " + join(lora_module_names()) +
                   " (Phi-3: qkv_proj, o_proj, gate_up_proj, down_proj), or all-linear",
               name.size());
    }
    want.push_back(name);
  };
  if (n.IsSequence()) {
    if (n.size() == 0) throw at(n, "lora.target_modules: expected at least one module", "e.g. [q_proj, v_proj] or all-linear");
    for (const auto& item : n) add(item);
  } else {
    add(n);
  }
  // Canonical order, no duplicates (the adapters' layout follows it).
  std::vector<std::string> out;
  for (const auto& m : known_modules())
    if (std::find(want.begin(), want.end(), m) != want.end()) out.push_back(m);
  c.target_modules = out;
}

}  // namespace

const std::vector<std::string>& lora_module_names() {
  static const std::vector<std::string> k = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  return k;
}

bool LoraConfig::targets(const std::string& module) const {
  return std::find(target_modules.begin(), target_modules.end(), module) != target_modules.end();
}

void set_lora_key(LoraConfig& c, const std::string& key, const YAML::Node& v) {
  const std::string path = "lora." + key;
  c.enabled = true;
  if (key == "r") {
    const double r = number(v, path);
    if (r != std::floor(r)) throw at(v, path + ": expected an integer, got '" + v.Scalar() + "'");
    c.r = static_cast<int64_t>(r);
  } else if (key == "alpha" || key == "lora_alpha") {
    c.alpha = number(v, path);
  } else if (key == "dropout" || key == "lora_dropout") {
    c.dropout = number(v, path);
  } else if (key == "target_modules") {
    set_targets(c, v);
  } else if (key == "init" || key == "init_lora_weights") {
    const std::string s = scalar(v, path, "default or gaussian");
    if (s == "default" || s == "true" || s == "True") c.init = "default";
    else if (s == "gaussian") c.init = "gaussian";
    else throw at(v, path + ": '" + s + "' is not one of: default, gaussian", "default is PEFT's init_lora_weights=True");
  } else if (key == "merge") {
    c.merge = boolean(v, path);
  } else if (key == "shard_base") {
    const std::string s = scalar(v, path, "auto, true or false");
    if (s == "auto") c.shard_base = "auto";
    else if (s == "true" || s == "True" || s == "yes" || s == "on") c.shard_base = "true";
    else if (s == "false" || s == "False" || s == "no" || s == "off") c.shard_base = "false";
    else throw at(v, path + ": '" + s + "' is not one of: auto, true, false",
                  "true shards the frozen base over the ranks (a base larger than one device); auto does when it must");
  } else {
    std::string hint = nearest(key, kKeys);
    throw at(v, "unknown key '" + path + "'", hint.empty() ? "lora takes: " + join(kKeys) : hint, key.size());
  }
}

void set_lora_yaml(LoraConfig& c, const YAML::Node& n) {
  if (n.IsNull() || (n.IsScalar() && (n.Scalar() == "false" || n.Scalar() == "off" || n.Scalar() == "null"))) {
    c = LoraConfig();
    return;
  }
  if (n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "on")) {
    c.enabled = true;
    return;
  }
  if (!n.IsMap())
    throw at(n, "lora: expected a mapping of LoRA settings", "e.g. lora: {r: 16, alpha: 32, target_modules: all-linear}");
  c.enabled = true;
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      std::string hint = nearest(key, kKeys);
      throw at(kv.first, "unknown key 'lora." + key + "'", hint.empty() ? "lora takes: " + join(kKeys) : hint,
               key.size());
    }
    set_lora_key(c, key, kv.second);
  }
}

void validate_lora(const LoraConfig& c, std::vector<std::string>& e) {
  if (!c.enabled) return;
  if (c.r < 1 || c.r > 4096) e.push_back("lora.r must be an integer from 1 to 4096 (got " + std::to_string(c.r) + ")");
  if (!(c.alpha > 0)) e.push_back("lora.alpha must be positive (the adapters are scaled by alpha / r)");
  if (!(c.dropout >= 0 && c.dropout < 1)) e.push_back("lora.dropout must be within [0, 1)");
  if (c.target_modules.empty()) e.push_back("lora.target_modules must name at least one block linear");
}

std::string render_lora(const LoraConfig& c) {
  if (!c.enabled) return "off";
  std::ostringstream o;
  o << "{r: " << c.r << ", alpha: " << c.alpha << ", dropout: " << c.dropout << ", target_modules: ["
    << join(c.target_modules) << "], init: " << c.init << ", merge: " << (c.merge ? "true" : "false")
    << ", shard_base: " << c.shard_base << "}";
  return o.str();
}

}  // namespace air::train
