// The workload parser's entry points: read the file safely, load YAML, apply overrides, decode and
// validate, and return every diagnostic sorted by position.
#include "core/workload/workload.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/workload/override.h"
#include "core/workload/decode.h"
#include "core/yaml/tree.h"

namespace air {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxFileBytes = 1 << 20;
constexpr size_t kMaxDiagnostics = 1000;

ParseResult file_error(const std::string& path, std::string message, std::string hint) {
  ParseResult r;
  Diagnostic d;
  d.file = path;
  d.message = std::move(message);
  d.hint = std::move(hint);
  r.diagnostics.push_back(std::move(d));
  return r;
}

bool only_comments(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t i = line.find_first_not_of(" \t\r");
    if (i == std::string::npos || line[i] == '#') continue;
    if (line.compare(i, 3, "---") == 0 && line.find_first_not_of(" \t\r", i + 3) == std::string::npos) continue;
    return false;
  }
  return true;
}

void sort_diagnostics(std::vector<Diagnostic>& ds, const std::string& file) {
  auto rank = [&](const Diagnostic& d) { return d.line == 0 ? 2 : d.file == file ? 0 : 1; };
  std::stable_sort(ds.begin(), ds.end(), [&](const Diagnostic& a, const Diagnostic& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    if (rank(a) == 2) return false;
    if (a.file != b.file) return false;
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  if (ds.size() > kMaxDiagnostics) ds.resize(kMaxDiagnostics);
}

}  // namespace

ParseResult parse_workload_file(const std::string& path, const ParseOptions& opts) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) {
      return file_error(path, "no such file", "check the path; it is relative to the current folder");
    }
    return file_error(path, fmt::format("cannot read the file: {}", std::strerror(err)), "");
  }
  if (S_ISDIR(st.st_mode)) {
    std::string hint = fs::exists(fs::path(path) / "train.yaml")
                           ? fmt::format("did you mean {}?", (fs::path(path) / "train.yaml").string())
                           : "pass the workload YAML file, not its folder";
    return file_error(path, "is a directory, not a workload file", hint);
  }
  if (!S_ISREG(st.st_mode)) return file_error(path, "is not a regular file", "pass the workload YAML file");
  if (static_cast<size_t>(st.st_size) > kMaxFileBytes) {
    return file_error(path,
                      fmt::format("file is {} bytes, over the 1024 KiB limit for a workload file", st.st_size),
                      "keep data and large settings in files under code_source, not in the YAML");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return file_error(path, fmt::format("cannot read the file: {}", std::strerror(errno)),
                      "check its permissions");
  }
  std::string text;
  text.resize(static_cast<size_t>(st.st_size));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (!in && !in.eof()) return file_error(path, "cannot read the file: read failed", "");
  text.resize(static_cast<size_t>(in.gcount()));
  std::error_code ec;
  fs::path abs = fs::absolute(fs::path(path), ec);
  std::string base_dir = (ec ? fs::path(path) : abs).parent_path().string();
  return parse_workload_text(text, path, base_dir, opts);
}

ParseResult parse_workload_text(const std::string& text_in, const std::string& file, const std::string& base_dir,
                                const ParseOptions& opts) {
  ParseResult r;
  std::vector<YamlSource> sources(1);
  sources[0].name = file;
  sources[0].text = text_in.rfind("\xEF\xBB\xBF", 0) == 0 ? text_in.substr(3) : text_in;
  DiagnosticSink sink(&sources);
  if (sources[0].text.size() > kMaxFileBytes) {
    sink.add_unlocated(file,
                       fmt::format("file is {} bytes, over the 1024 KiB limit for a workload file",
                                   sources[0].text.size()),
                       "keep data and large settings in files under code_source, not in the YAML");
    r.diagnostics = std::move(sink.diagnostics());
    return r;
  }
  if (only_comments(sources[0].text) && sources[0].text.find('\0') == std::string::npos) {
    sink.add_unlocated(file, "the workload file is empty",
                       "a workload needs at least experiment_name, compute and command (see examples/)");
    r.diagnostics = std::move(sink.diagnostics());
    return r;
  }
  std::optional<YamlNode> root = load_yaml(sources, 0, sink);
  if (root) {
    report_duplicate_keys(*root, sink);
    if (!opts.overrides.empty() && root->is_mapping()) {
      r.notes = apply_overrides(*root, sources, opts.overrides, sink);
    }
    Workload w;
    w.source_file = file;
    WorkloadDecoder decoder(sink, opts, base_dir);
    decoder.decode(*root, file, w);
    w.source_text = opts.overrides.empty() ? text_in : emit_yaml(*root);
    if (sink.error_count() == 0) r.workload = std::move(w);
  }
  r.diagnostics = std::move(sink.diagnostics());
  sort_diagnostics(r.diagnostics, file);
  return r;
}

}  // namespace air
