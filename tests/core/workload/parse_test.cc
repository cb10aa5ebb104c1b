// The workload parser beyond single diagnostics: the reference example's values, every example validating,
// overrides, the error cap, hostile input, root_path resolution, and the JSON form of diagnostics.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/workload/workload.h"
#include "core/workload/decode.h"

namespace fs = std::filesystem;

namespace {

const std::string kExamples = std::string(AIR_TEST_DATA_DIR) + "/../examples";

std::string rendered(const air::ParseResult& r, const std::string& file = "train.yaml") {
  return air::render_all(r.diagnostics, file, "nothing was submitted");
}

air::ParseResult parse(const std::string& yaml, std::vector<std::string> overrides = {}) {
  air::ParseOptions opts;
  opts.check_paths = false;
  opts.overrides = std::move(overrides);
  return air::parse_workload_text(yaml, "train.yaml", "/tmp", opts);
}

const char* kValid = R"(experiment_name: demo
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 16
command: python train.py
)";

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("air_wl_test_" + std::to_string(::getpid()) + "_" + std::to_string(rand()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

}  // namespace

TEST_CASE("reference workload decodes into 2 nodes of 8 GPUs") {
  air::ParseResult r = air::parse_workload_file(kExamples + "/multinode_llm_sft/train.yaml");
  INFO(rendered(r));
  REQUIRE(r.ok());
  const air::Workload& w = *r.workload;
  CHECK(w.experiment_name == "air-multinode-llama-sft");
  CHECK(w.compute.accelerator_type == "GPU_8xH100");
  CHECK(w.compute.num_accelerators == 16);
  CHECK(w.compute.nodes == 2);
  CHECK(w.compute.accelerators_per_node == 8);
  CHECK(w.compute.gpu);
  CHECK(w.environment.version == "4");
  CHECK(w.environment.dependencies.size() == 5);
  CHECK(w.environment.dependencies.back() == "fsspec>=2024.6.1");
  REQUIRE(w.code_source);
  CHECK(w.code_source->root_path == ".");
  CHECK(fs::equivalent(w.code_source->root_path_resolved, kExamples + "/multinode_llm_sft"));
  CHECK(w.command.rfind("cd $CODE_SOURCE_PATH\n", 0) == 0);
  REQUIRE(w.env_variables.size() == 2);
  CHECK(w.env_variables[0] == std::make_pair(std::string("NCCL_SOCKET_IFNAME"), std::string("eth0")));
  REQUIRE(w.secrets.size() == 1);
  CHECK(w.secrets[0].name == "HF_TOKEN");
  CHECK(w.secrets[0].scope == "my_scope");
  CHECK(w.secrets[0].key == "hf_token");
  CHECK(w.max_retries == 1);
  CHECK(w.timeout_minutes == 120);
  CHECK(w.parameters_yaml.find("learning_rate: 0.00002\n") != std::string::npos);
  CHECK(w.parameters_yaml.find("model_name: meta-llama/Llama-3.1-8B\n") == 0);
}

TEST_CASE("every example workload validates") {
  int count = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kExamples)) {
    auto ext = entry.path().extension();
    if (ext != ".yaml" && ext != ".yml") continue;
    ++count;
    air::ParseResult r = air::parse_workload_file(entry.path().string());
    INFO(entry.path().string() << "\n" << rendered(r, entry.path().string()));
    CHECK(r.ok());
    CHECK(r.diagnostics.empty());
  }
  CHECK(count >= 2);
}

TEST_CASE("CPU example gives 2 nodes of 2 rank slots without GPUs") {
  air::ParseResult r = air::parse_workload_file(kExamples + "/tiny_cpu/train.yaml");
  REQUIRE(r.ok());
  CHECK(r.workload->compute.nodes == 2);
  CHECK(r.workload->compute.accelerators_per_node == 2);
  CHECK_FALSE(r.workload->compute.gpu);
}

TEST_CASE("defaults: max_retries 3, no timeout, scalars in env_variables kept as written") {
  air::ParseResult r = parse(std::string(kValid) + "env_variables:\n  A: 32\n  B: 0.001\n  C: true\n  D: 'x y'\n");
  REQUIRE(r.ok());
  CHECK(r.workload->max_retries == 3);
  CHECK_FALSE(r.workload->timeout_minutes);
  std::vector<std::pair<std::string, std::string>> want = {{"A", "32"}, {"B", "0.001"}, {"C", "true"}, {"D", "x y"}};
  CHECK(r.workload->env_variables == want);
  CHECK(r.workload->parameters_yaml.empty());
}

TEST_CASE("override changes a value and the change is reported") {
  air::ParseResult r = parse(kValid, {"compute.num_accelerators=32", "parameters.lr=0.1"});
  REQUIRE(r.ok());
  CHECK(r.workload->compute.nodes == 4);
  CHECK(r.workload->parameters_yaml == "lr: 0.1\n");
  std::vector<std::string> want = {"Override: changing compute.num_accelerators from 16 to 32",
                                   "Override: setting parameters.lr to 0.1"};
  CHECK(r.notes == want);
  CHECK(r.workload->source_text.find("num_accelerators: 32") != std::string::npos);
}

TEST_CASE("override value errors point at the --override argument") {
  air::ParseResult r = parse(kValid, {"compute.num_accelerators=eight"});
  CHECK(rendered(r) == R"(--override:1:26: error: 'compute.num_accelerators' must be an integer, found the string 'eight'
compute.num_accelerators=eight
                         ^~~~~
  hint: write a whole number such as 8
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("override with an unknown path gets did-you-mean") {
  air::ParseResult r = parse(kValid, {"compute.acelerator_type=GPU_1xA10"});
  CHECK(rendered(r) == R"(--override:1:9: error: invalid --override: unknown field 'compute.acelerator_type'
compute.acelerator_type=GPU_1xA10
        ^~~~~~~~~~~~~~~
  hint: did you mean 'accelerator_type'?
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("override without '=' and into a scalar are usage errors") {
  CHECK(rendered(parse(kValid, {"train.yaml"})) == R"(--override:1:1: error: invalid --override: expected KEY=VALUE
train.yaml
^~~~~~~~~~
  hint: to choose the workload file use -f; --override takes KEY=VALUE
air: 1 error in train.yaml; nothing was submitted
)");
  CHECK(rendered(parse(kValid, {"command.x=1"})) == R"(--override:1:9: error: 'command' is a string, not a nested object
command.x=1
        ^
air: 1 error in train.yaml; nothing was submitted
)");
}

TEST_CASE("after an override, errors in untouched keys still point into the file") {
  std::string yaml = std::string(kValid) + "max_retries: -1\n";
  air::ParseResult r = parse(yaml, {"timeout_minutes=0"});
  CHECK(rendered(r) == R"(train.yaml:6:14: error: 'max_retries' must be >= 0, found -1
max_retries: -1
             ^~
  hint: use 0 to disable retries
--override:1:17: error: 'timeout_minutes' must be >= 1, found 0
timeout_minutes=0
                ^
  hint: remove it for no timeout
air: 2 errors in train.yaml; nothing was submitted
)");
}

TEST_CASE("more than 20 errors are capped with a count") {
  std::string yaml = kValid;
  yaml += "env_variables:\n";
  for (int i = 0; i < 25; ++i) yaml += "  " + std::to_string(i) + "X: v\n";
  air::ParseResult r = parse(yaml);
  CHECK(r.diagnostics.size() == 25);
  std::string text = rendered(r);
  CHECK(text.find("... and 5 more errors\nair: 25 errors in train.yaml; nothing was submitted\n") != std::string::npos);
}

TEST_CASE("hostile input fails cleanly") {
  SECTION("deep flow nesting") {
    std::string deep = "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
    air::ParseResult r = parse(deep);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].message == "nesting is deeper than 64 levels");
  }
  SECTION("deep block nesting") {
    std::string deep;
    for (int i = 0; i < 30000; ++i) deep += "- ";
    air::ParseResult r = parse(deep + "x\n");
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].message == "nesting is deeper than 64 levels");
  }
  SECTION("alias bomb") {
    std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i < 9; ++i) {
      std::string prev = "*a" + std::to_string(i - 1);
      yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
      for (int k = 0; k < 10; ++k) yaml += (k ? ", " : "") + prev;
      yaml += "]\n";
    }
    air::ParseResult r = parse(yaml);
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].message == "the document expands to more than 100000 values (aliases repeat content)");
  }
  SECTION("alias that refers to itself") {
    air::ParseResult r = parse("a: &x [*x]\n");
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].message == "nesting is deeper than 64 levels");
  }
  SECTION("NUL bytes") {
    air::ParseResult r = parse(std::string("experiment_name: a\0b\n", 21));
    CHECK(rendered(r) == "train.yaml: error: this is not a YAML text file: it contains a NUL byte (line 1, column 19)\n"
                         "  hint: pass the workload YAML file (UTF-8 text)\n"
                         "air: 1 error in train.yaml; nothing was submitted\n");
  }
  SECTION("a stray top-level ',' (yaml-cpp's LoadAll would loop forever)") {
    CHECK(rendered(parse("[a]\n, b\n")) == R"(train.yaml:2:1: error: unexpected ',' outside a '[...]' or '{...}' collection
, b
^
  hint: remove it, or quote a value that starts with ','
air: 1 error in train.yaml; nothing was submitted
)");
    CHECK(parse(",").diagnostics.size() == 1);
  }
  SECTION("a second document after a block mapping: a directive, a marker, or none (one pass suffices)") {
    // load_yaml skips its document-counting pass when no line can start a second document; these must
    // still be caught (a skipped pass would parse only the first mapping and report missing keys instead).
    for (const char* text : {"experiment_name: e\n%YAML 1.2\ncommand: x\n", "experiment_name: e\n---\ncommand: x\n",
                             "experiment_name: e\n...\ncommand: x\n"}) {
      air::ParseResult r = parse(text);
      REQUIRE(r.diagnostics.size() == 1);
      CHECK(r.diagnostics[0].message.find("more than one YAML document") != std::string::npos);
    }
    air::ParseResult one = parse("experiment_name: e\n]]\n");
    REQUIRE(!one.diagnostics.empty());
    CHECK(one.diagnostics[0].message.find("closing bracket") != std::string::npos);
  }
  SECTION("comments only") {
    CHECK(rendered(parse("# nothing\n\n  # here\n")) ==
          "train.yaml: error: the workload file is empty\n"
          "  hint: a workload needs at least experiment_name, compute and command (see examples/)\n"
          "air: 1 error in train.yaml; nothing was submitted\n");
  }
  SECTION("text over 1 MiB") {
    air::ParseResult r = parse("a: " + std::string(1 << 20, 'x'));
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].message == "file is 1048579 bytes, over the 1024 KiB limit for a workload file");
  }
}

TEST_CASE("file problems: missing, directory, unreadable") {
  TempDir dir;
  std::string missing = (dir.path / "nope.yaml").string();
  CHECK(rendered(air::parse_workload_file(missing), missing) ==
        missing + ": error: no such file\n  hint: check the path; it is relative to the current folder\n"
                  "air: 1 error in " + missing + "; nothing was submitted\n");
  air::ParseResult d = air::parse_workload_file(dir.path.string());
  REQUIRE(d.diagnostics.size() == 1);
  CHECK(d.diagnostics[0].message == "is a directory, not a workload file");
  std::string locked = dir.write("locked.yaml", kValid);
  fs::permissions(locked, fs::perms::none);
  air::ParseResult u = air::parse_workload_file(locked);
  if (::geteuid() != 0) {
    REQUIRE(u.diagnostics.size() == 1);
    CHECK(u.diagnostics[0].message == "cannot read the file: Permission denied");
  }
}

TEST_CASE("root_path resolves against the YAML folder and must exist") {
  TempDir dir;
  fs::create_directories(dir.path / "proj" / "src");
  std::string yaml = std::string(kValid) + "code_source:\n  type: snapshot\n  snapshot:\n    root_path: proj\n"
                                           "    include_paths: [src, missing]\n";
  std::string file = dir.write("train.yaml", yaml);
  air::ParseResult r = air::parse_workload_file(file);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].message == "include path 'missing' does not exist under " + (dir.path / "proj").string());
  CHECK(r.diagnostics[0].line == 10);

  CHECK(air::resolve_root_path("proj", dir.path.string()) == (dir.path / "proj").string());
  CHECK(air::resolve_root_path("project_root/proj/src", dir.path.string()) == (dir.path / "proj/src").string());
  CHECK(air::resolve_root_path("./proj/../proj", dir.path.string()) == (dir.path / "proj").string());
  ::setenv("AIR_TEST_ROOT", dir.path.c_str(), 1);
  CHECK(air::resolve_root_path("$AIR_TEST_ROOT/proj", "/elsewhere") == (dir.path / "proj").string());
  CHECK(air::resolve_root_path("${AIR_TEST_ROOT}/proj", "/elsewhere") == (dir.path / "proj").string());
  ::setenv("HOME", dir.path.c_str(), 1);
  CHECK(air::resolve_root_path("~/proj", "/elsewhere") == (dir.path / "proj").string());
}

TEST_CASE("diagnostics survive a JSON round trip") {
  air::ParseResult r = parse("experiment_name: demo\ncompute: {accelerator_type: GPU_8xh100, num_accelerators: 16}\n"
                             "command: x\n");
  REQUIRE(r.diagnostics.size() == 1);
  air::Diagnostic back = air::diagnostic_from_json(air::to_json(r.diagnostics[0]));
  CHECK(air::render(back) == air::render(r.diagnostics[0]));
  CHECK(air::diagnostic_from_json(nlohmann::json::parse(R"({"line": "x"})")).line == 0);
}

TEST_CASE("columns count characters, not bytes, and carets keep tabs") {
  air::ParseResult r = parse("experiment_name: \"héllo wörld\"\ncompute: {accelerator_type: GPU_8xH100, "
                             "num_accelerators: 16}\ncommand: x\n");
  CHECK(rendered(r) == "train.yaml:1:18: error: invalid experiment_name 'héllo wörld': only letters, digits, '_' "
                       "and '-' are allowed\n"
                       "experiment_name: \"héllo wörld\"\n"
                       "                 ^~~~~~~~~~~~~\n"
                       "  hint: did you mean 'h-llo-w-rld'?\n"
                       "air: 1 error in train.yaml; nothing was submitted\n");
}
