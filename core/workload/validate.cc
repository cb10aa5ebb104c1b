// The semantic stage of the workload parser: the rules of each field (air-cli-facts.md §3 B and ours),
// each error located at its key or value. Runs after the structural stage, skipping nodes it marked bad.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "core/workload/accelerators.h"
#include "core/base/edit_distance.h"
#include "core/workload/requirement.h"
#include "core/workload/decode.h"

namespace air {

namespace {

bool name_chars_ok(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

std::string sanitized_name(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    if (ok) out += c;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

bool env_name_ok(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }) &&
         std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Set by air on every node; a user value would be silently replaced, so refuse it.
bool reserved_env_name(const std::string& s) {
  static const char* names[] = {"NUM_NODES",   "NODE_RANK",        "LOCAL_WORLD_SIZE",   "MASTER_ADDR",
                                "MASTER_PORT", "CODE_SOURCE_PATH", "HYPERPARAMETERS_PATH"};
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return s == n; });
}

bool secret_part_ok(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n')) + 1 - (!s.empty() && s.back() == '\n');
}

}  // namespace

void WorkloadDecoder::decode(const YamlNode& root, const std::string& file, Workload& w) {
  file_ = file;
  check_structure(root, workload_schema(), nullptr, "");
  if (bad_.count(&root)) return;
  if (Entry e = get(&root, "experiment_name")) {
    w.experiment_name = trim(*text(e));
    check_name(e, "experiment_name", 100);
  }
  decode_compute(get(&root, "compute"), w.compute);
  decode_environment(get(&root, "environment"), w.environment);
  decode_code_source(get(&root, "code_source"), w.code_source);
  if (Entry e = get(&root, "command")) {
    w.command = *text(e);
    if (trim(w.command).empty()) {
      error_key(e, "'command' is empty", "give the shell command to run on every node");
    } else if (int lines = count_lines(w.command); lines > 1000) {
      error_key(e, fmt::format("'command' is too long: {} lines, the maximum is 1000", lines),
                "move complex logic into a script in your code_source and run that");
    }
  }
  decode_env_and_secrets(root, w);
  if (Entry e = get(&root, "parameters"); e && !e.value->entries.empty()) w.parameters_yaml = emit_yaml(*e.value);
  decode_run_options(root, w);
}

void WorkloadDecoder::check_name(Entry e, const char* field, size_t max_len) {
  std::string v = trim(*text(e));
  if (v.empty()) {
    error_key(e, fmt::format("'{}' is empty", field), "use letters, digits, '_' and '-'");
  } else if (v.size() > max_len) {
    error(*e.value, fmt::format("'{}' is {} characters long; the maximum is {}", field, v.size(), max_len));
  } else if (!name_chars_ok(v)) {
    std::string fixed = sanitized_name(v);
    std::string hint = fixed.empty() ? "use only letters, digits, '_' and '-'"
                                     : fmt::format("did you mean '{}'?", fixed);
    error(*e.value, fmt::format("invalid {} '{}': only letters, digits, '_' and '-' are allowed", field, v), hint);
  }
}

void WorkloadDecoder::decode_compute(Entry e, Compute& c) {
  if (!e) return;
  const YamlNode* m = e.value;
  Entry type = get(m, "accelerator_type");
  Entry num = get(m, "num_accelerators");
  const AcceleratorType* acc = nullptr;
  if (type) {
    c.accelerator_type = *text(type);
    acc = find_accelerator(c.accelerator_type);
    if (!acc) {
      std::string guess = closest_match(c.accelerator_type, accelerator_names());
      std::string hint;
      if (!guess.empty()) {
        bool case_only = guess.size() == c.accelerator_type.size() &&
                         std::equal(guess.begin(), guess.end(), c.accelerator_type.begin(), [](char a, char b) {
                           return std::tolower(static_cast<unsigned char>(a)) ==
                                  std::tolower(static_cast<unsigned char>(b));
                         });
        hint = fmt::format("did you mean '{}'?{}", guess, case_only ? " (names are case-sensitive)" : "");
      } else {
        std::string all;
        for (const auto& n : accelerator_names()) all += (all.empty() ? "" : ", ") + n;
        hint = "valid types: " + all;
      }
      error(*type.value, fmt::format("unknown accelerator type '{}'", c.accelerator_type), hint);
    }
  }
  if (auto n = integer(num)) {
    c.num_accelerators = static_cast<int>(*n);
    if (*n <= 0) {
      error(*num.value, fmt::format("'compute.num_accelerators' must be positive, found {}", *n),
            acc ? fmt::format("{} has {} per node; use a multiple of it", acc->name, acc->per_node) : "");
    } else if (acc && *n % acc->per_node != 0) {
      long long lo = *n / acc->per_node * acc->per_node, hi = lo + acc->per_node;
      auto nodes = [&](long long v) {
        long long k = v / acc->per_node;
        return fmt::format("{} ({} {})", v, k, k == 1 ? "node" : "nodes");
      };
      std::string hint = lo > 0 ? fmt::format("use {} or {}", nodes(lo), nodes(hi)) : "use " + nodes(hi);
      error(*num.value,
            fmt::format("'compute.num_accelerators' must be a multiple of {} for {} ({} per node), found {}",
                        acc->per_node, acc->name, acc->per_node, *n),
            hint);
    }
  }
  if (Entry pool = get(m, "pool_id")) {
    c.pool_id = trim(*text(pool));
    if (c.pool_id.empty()) error_key(pool, "'compute.pool_id' is empty", "remove it to use the default pool");
  }
  if (acc) {
    c.accelerators_per_node = acc->per_node;
    c.gpu = acc->gpu;
    if (c.num_accelerators > 0) c.nodes = c.num_accelerators / acc->per_node;
  }
}

void WorkloadDecoder::decode_environment(Entry e, Environment& env) {
  if (!e) return;
  const YamlNode* m = e.value;
  Entry version = get(m, "version");
  Entry deps = get(m, "dependencies");
  Entry docker = get(m, "docker_image");
  if (version) env.version = trim(*text(version));
  if (deps) {
    for (const auto& item : deps.value->items) decode_dependency(item, env);
  }
  if (version && !m->find("dependencies")) {
    error_key(version, "'environment.version' needs 'dependencies' beside it",
              "add 'dependencies:' with the packages to install, or remove 'version'");
  }
  if (docker) {
    const YamlNode* d = docker.value;
    if (m->find("dependencies") || m->find("version")) {
      error_key(docker, "'docker_image' cannot be combined with 'dependencies' or 'version' in 'environment'",
                "install packages in the image, or drop docker_image");
    }
    DockerImage img;
    if (Entry url = get(d, "url")) {
      img.url = trim(*text(url));
      if (img.url.empty()) error_key(url, "'docker_image.url' is empty", "give the image URL");
    }
    Entry policy = get(d, "tag_policy");
    if (policy) {
      std::string p = *text(policy);
      std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return std::tolower(c); });
      if (p != "auto" && p != "latest") {
        error(*policy.value, fmt::format("'docker_image.tag_policy' must be 'auto' or 'latest', found '{}'",
                                         *text(policy)));
      }
      img.tag_policy = p;
    }
    Entry scope = get(d, "credentials_scope"), key = get(d, "credentials_key");
    if (scope) img.credentials_scope = *text(scope);
    if (key) img.credentials_key = *text(key);
    if (bool(scope) != bool(key)) {
      error_key(scope ? scope : key, "'credentials_scope' and 'credentials_key' must be given together",
                "add the other one, or remove this one");
    } else if (scope && img.tag_policy != "latest") {
      error_key(scope, "registry credentials only apply with tag_policy 'latest'", "add 'tag_policy: latest'");
    }
    env.docker_image = img;
  }
}

void WorkloadDecoder::decode_dependency(const YamlNode& item, Environment& env) {
  if (bad_.count(&item) || !item.is_scalar()) return;
  std::string req = item.scalar;
  env.dependencies.push_back(req);
  auto problem = check_requirement(req);
  if (!problem) return;
  YamlNode at = item;
  // Point inside the requirement when it sits on one line as written.
  if (req.find('\n') == std::string::npos) {
    at.pos.column += static_cast<int>(problem->offset) + (item.plain ? 0 : 1);
    error(at, fmt::format("invalid requirement '{}': {}", req, problem->message), problem->hint,
          static_cast<int>(problem->length));
  } else {
    error(item, fmt::format("invalid requirement: {}", problem->message), problem->hint);
  }
}

void WorkloadDecoder::decode_env_and_secrets(const YamlNode& root, Workload& w) {
  std::map<std::string, const YamlNode*> env_keys;
  if (Entry e = get(&root, "env_variables")) {
    for (const auto& [k, v] : e.value->entries) {
      if (!k.is_scalar() || bad_.count(&v)) continue;
      if (!env_name_ok(k.scalar)) {
        error(k, fmt::format("invalid environment variable name '{}'", k.scalar),
              "names use letters, digits and '_' and do not start with a digit");
      } else if (reserved_env_name(k.scalar)) {
        error(k, fmt::format("'{}' is set by air on every node; it cannot be set in env_variables", k.scalar),
              "choose another name");
      }
      env_keys.emplace(k.scalar, &k);
      w.env_variables.emplace_back(k.scalar, v.scalar);
    }
  }
  Entry s = get(&root, "secrets");
  if (!s) return;
  for (const auto& [k, v] : s.value->entries) {
    if (!k.is_scalar() || bad_.count(&v)) continue;
    if (!env_name_ok(k.scalar)) {
      error(k, fmt::format("invalid environment variable name '{}' in 'secrets'", k.scalar),
            "names use letters, digits and '_' and do not start with a digit");
    } else if (reserved_env_name(k.scalar)) {
      error(k, fmt::format("'{}' is set by air on every node; it cannot be a secret", k.scalar),
            "choose another name");
    }
    if (auto it = env_keys.find(k.scalar); it != env_keys.end()) {
      error(k, fmt::format("'{}' is set in both env_variables (line {}) and secrets", k.scalar,
                           it->second->pos.line),
            "remove it from one of them");
    }
    std::string ref = trim(v.scalar);
    size_t slash = ref.find('/');
    SecretRef sr{k.scalar, slash == std::string::npos ? ref : ref.substr(0, slash),
                 slash == std::string::npos ? "" : ref.substr(slash + 1)};
    if (slash == std::string::npos || ref.find('/', slash + 1) != std::string::npos) {
      error(v, fmt::format("invalid secret reference '{}' for '{}': expected scope/key with exactly one '/'", ref,
                           k.scalar),
            "for example 'my_scope/hf_token'");
    } else if (sr.scope.empty() || sr.key.empty()) {
      error(v, fmt::format("invalid secret reference '{}' for '{}': the scope and the key must both be non-empty",
                           ref, k.scalar),
            "for example 'my_scope/hf_token'");
    } else if (!secret_part_ok(sr.scope) || !secret_part_ok(sr.key)) {
      error(v, fmt::format("invalid secret reference '{}' for '{}': scope and key use letters, digits, '_', '-' "
                           "and '.'",
                           ref, k.scalar));
    }
    w.secrets.push_back(sr);
  }
}

}  // namespace air
