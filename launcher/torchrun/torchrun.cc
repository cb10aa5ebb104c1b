// air-torchrun's command line: torchrun's option names and PET_* defaults, the per-rank environment, and
// the GPU count behind --nproc_per_node=gpu|auto. The process supervision lives in torchrun_run.cc.
#include "launcher/torchrun/torchrun.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

#include "core/base/error.h"

namespace air::launcher {
namespace {

// The options we accept, in their canonical (underscore) spelling; `flag` ones take no value.
struct OptionInfo {
  const char* name;
  bool flag;
};
constexpr OptionInfo kOptions[] = {
    {"nnodes", false},      {"node_rank", false},   {"nproc_per_node", false}, {"master_addr", false},
    {"master_port", false}, {"standalone", true},   {"tee", false},            {"prefix_output", true},
    {"no_python", true},    {"grace_period", false}, {"max_restarts", false},
};

std::string canonical(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

const OptionInfo* find_option(const std::string& name) {
  for (const auto& o : kOptions)
    if (name == o.name) return &o;
  return nullptr;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

Error unknown_option(const std::string& name) {
  std::string best;
  size_t best_distance = 4;
  for (const auto& o : kOptions) {
    size_t d = edit_distance(name, o.name);
    if (d < best_distance) best_distance = d, best = o.name;
  }
  std::string hint = best.empty() ? "see docs/torchrun.md for the supported options"
                                   : "did you mean '--" + best + "'?";
  return usage_error("unknown option '--" + name + "'", hint);
}

int parse_int(const std::string& option, const std::string& value, int min, int max) {
  size_t used = 0;
  long parsed = 0;
  try {
    parsed = std::stol(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || parsed < min || parsed > max)
    throw usage_error("--" + option + " must be an integer from " + std::to_string(min) + " to " +
                      std::to_string(max) + ", got '" + value + "'");
  return static_cast<int>(parsed);
}

void apply(TorchrunOptions& o, const std::string& name, const std::string& value) {
  if (name == "nnodes") {
    // torchrun's elastic MIN:MAX form is accepted only when both ends agree: rendezvous here is static.
    auto colon = value.find(':');
    if (colon != std::string::npos) {
      if (value.substr(0, colon) != value.substr(colon + 1))
        throw usage_error("elastic --nnodes ranges ('" + value + "') are not supported",
                          "give a fixed node count, e.g. --nnodes=2");
      o.nnodes = parse_int(name, value.substr(0, colon), 1, 1 << 20);
    } else {
      o.nnodes = parse_int(name, value, 1, 1 << 20);
    }
  } else if (name == "node_rank") {
    o.node_rank = parse_int(name, value, 0, 1 << 20);
  } else if (name == "nproc_per_node") {
    if (value != "gpu" && value != "auto" && value != "cpu") parse_int(name, value, 1, 4096);
    o.nproc_per_node = value;
  } else if (name == "master_addr") {
    if (value.empty()) throw usage_error("--master_addr must not be empty");
    o.master_addr = value;
  } else if (name == "master_port") {
    o.master_port = parse_int(name, value, 0, 65535);
  } else if (name == "tee") {
    o.tee = parse_int(name, value, 0, 3);
  } else if (name == "grace_period") {
    o.grace_seconds = parse_int(name, value, 0, 3600);
  } else if (name == "max_restarts") {
    // Restarts are the workspace's job (max_retries restarts the whole gang), not the launcher's.
    if (parse_int(name, value, 0, 1000) != 0)
      throw usage_error("--max_restarts other than 0 is not supported",
                        "set max_retries in the workload: air retries the whole attempt");
  } else if (name == "standalone") {
    o.standalone = true;
  } else if (name == "prefix_output") {
    o.tee = 3;
  } else if (name == "no_python") {
    o.no_python = true;
  }
}

bool truthy(const std::string& v) { return v == "1" || v == "true" || v == "True" || v == "yes"; }

}  // namespace

TorchrunOptions parse_torchrun_args(const std::vector<std::string>& args, const Environment& env) {
  TorchrunOptions o;
  // PET_* first, so the command line wins.
  for (const auto& info : kOptions) {
    std::string key = "PET_" + std::string(info.name);
    std::transform(key.begin(), key.end(), key.begin(), ::toupper);
    auto it = env.find(key);
    if (it == env.end() || it->second.empty()) continue;
    if (info.flag) {
      if (truthy(it->second)) apply(o, info.name, "");
    } else {
      try {
        apply(o, info.name, it->second);
      } catch (const Error& e) {
        throw usage_error(key + ": " + e.what(), e.hint());
      }
    }
  }
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.rfind("--", 0) != 0) break;
    std::string body = arg.substr(2), value;
    auto eq = body.find('=');
    bool has_value = eq != std::string::npos;
    if (has_value) value = body.substr(eq + 1), body = body.substr(0, eq);
    std::string name = canonical(body);
    const OptionInfo* info = find_option(name);
    if (!info) throw unknown_option(name);
    if (info->flag) {
      if (has_value && !truthy(value) && value != "0" && value != "false")
        throw usage_error("--" + name + " takes no value");
      if (!has_value || truthy(value)) apply(o, name, "");
      continue;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) throw usage_error("--" + name + " needs a value");
      value = args[++i];
    }
    apply(o, name, value);
  }
  o.command.assign(args.begin() + static_cast<long>(i), args.end());
  if (o.command.empty())
    throw usage_error("no program given",
                      "usage: air-torchrun [--nnodes N --node_rank R --nproc_per_node P "
                      "--master_addr A --master_port P] program [args...]");
  if (o.standalone) o.nnodes = 1, o.node_rank = 0, o.master_addr = "127.0.0.1", o.master_port = 0;
  if (o.node_rank >= o.nnodes)
    throw usage_error("--node_rank " + std::to_string(o.node_rank) + " is out of range for --nnodes " +
                      std::to_string(o.nnodes), "node ranks run from 0 to nnodes - 1");
  return o;
}

int count_local_gpus(const Environment& env) {
  auto it = env.find("CUDA_VISIBLE_DEVICES");
  if (it != env.end()) {
    // "" and "-1" hide every GPU; otherwise count the comma-separated entries.
    const std::string& v = it->second;
    if (v.empty() || v == "-1" || v == "none" || v == "NoDevFiles") return 0;
    return static_cast<int>(std::count(v.begin(), v.end(), ',')) + 1;
  }
  FILE* pipe = popen("nvidia-smi -L 2>/dev/null", "r");
  if (!pipe) return 0;
  int count = 0;
  char line[512];
  while (fgets(line, sizeof line, pipe))
    if (std::string(line).rfind("GPU ", 0) == 0) ++count;
  pclose(pipe);
  return count;
}

int resolve_nproc(const std::string& spec, const Environment& env) {
  if (spec == "cpu") return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (spec == "gpu" || spec == "auto") {
    int gpus = count_local_gpus(env);
    if (gpus > 0) return gpus;
    if (spec == "auto") return 1;
    throw usage_error("--nproc_per_node=gpu but this node has no GPUs",
                      "CUDA_VISIBLE_DEVICES hides them all or `nvidia-smi -L` lists none; "
                      "give a number, or use --nproc_per_node=auto (1 process without GPUs)");
  }
  return std::stoi(spec);
}

Environment rank_environment(const TorchrunOptions& o, int nproc, int local_rank) {
  int world = o.nnodes * nproc;
  int rank = o.node_rank * nproc + local_rank;
  return {
      {"RANK", std::to_string(rank)},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"WORLD_SIZE", std::to_string(world)},
      {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
      {"GROUP_RANK", std::to_string(o.node_rank)},
      {"GROUP_WORLD_SIZE", std::to_string(o.nnodes)},
      {"ROLE_RANK", std::to_string(rank)},
      {"ROLE_WORLD_SIZE", std::to_string(world)},
      {"ROLE_NAME", "default"},
      {"MASTER_ADDR", o.master_addr},
      {"MASTER_PORT", std::to_string(o.master_port)},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"TORCHELASTIC_MAX_RESTARTS", "0"},
      {"TORCHELASTIC_RUN_ID", "none"},
  };
}

int torchrun_main(int argc, char** argv) {
  try {
    Environment env;
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    TorchrunOptions options = parse_torchrun_args(std::vector<std::string>(argv + 1, argv + argc), env);
    return run_torchrun(options);
  } catch (const Error& e) {
    std::cerr << "air-torchrun: error: " << e.what() << "\n";
    if (!e.hint().empty()) std::cerr << "  hint: " << e.hint() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "air-torchrun: error: " << e.what() << "\n";
    return kExitFailed;
  }
}

}  // namespace air::launcher
