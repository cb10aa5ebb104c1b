// Our own YAML tree: every node keeps where it came from (the workload file or one --override argument),
// mappings keep duplicate keys in file order, and loading guards against hostile input (size, encoding,
// nesting depth, alias expansion) before and after yaml-cpp sees the text.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/diagnostics.h"

namespace air {

// A position: which source (index into the source list), 1-based line, 1-based byte column.
struct YamlPos {
  int source = 0;
  int line = 0;
  int column = 0;
};

struct YamlEntry;

struct YamlNode {
  enum class Kind { kNull, kScalar, kSequence, kMapping };
  Kind kind = Kind::kNull;
  std::string scalar;  // the scalar's text (block scalars and quoted ones unescaped by yaml-cpp)
  bool plain = true;   // false when quoted, a block scalar, or tagged !!str: then it is always a string
  std::string tag;     // an explicit tag other than !!str, as yaml-cpp reports it (usually empty)
  YamlPos pos;
  std::vector<YamlNode> items;                         // sequence
  // Mapping: key, value (duplicates kept). Not std::pair: a pair of the still-incomplete YamlNode does not
  // compile with clang + libstdc++ (only vectors may hold incomplete types).
  std::vector<YamlEntry> entries;

  bool is_null() const { return kind == Kind::kNull; }
  bool is_scalar() const { return kind == Kind::kScalar; }
  bool is_sequence() const { return kind == Kind::kSequence; }
  bool is_mapping() const { return kind == Kind::kMapping; }
  // The value of the first entry whose key is `key`; nullptr if none.
  const YamlNode* find(std::string_view key) const;
  YamlNode* find(std::string_view key);
};

struct YamlEntry {
  YamlNode first;   // the key
  YamlNode second;  // the value
};

// "a mapping", "a sequence", "a string 'x'", "the number 8", "nothing (null)": for "found ..." texts.
std::string describe_node(const YamlNode& n);

// A text that diagnostics can point into.
struct YamlSource {
  std::string name;        // "train.yaml" as the user named it, or "--override"
  std::string text;        // the YAML text (for an override: the value part)
  std::string display;     // for an override: the whole KEY=VALUE argument shown under the error
  int column_offset = 0;   // for an override: bytes before the value in `display`
  // Line n (1-based) as shown to the user, without its newline; empty when out of range.
  std::string line_text(int line) const;
};

// Collects diagnostics, filling in the source line and turning byte columns into character columns.
class DiagnosticSink {
 public:
  explicit DiagnosticSink(const std::vector<YamlSource>* sources) : sources_(sources) {}
  // length is in bytes of the source line starting at pos (0: guess from the text at pos).
  void add(const YamlPos& pos, int length, std::string message, std::string hint = {},
           std::string severity = "error");
  // An error with no location (missing file, missing top-level key).
  void add_unlocated(const std::string& file, std::string message, std::string hint = {});
  size_t error_count() const;
  std::vector<Diagnostic>& diagnostics() { return diagnostics_; }

 private:
  const std::vector<YamlSource>* sources_;
  std::vector<Diagnostic> diagnostics_;
};

struct YamlLimits {
  size_t max_bytes = 1 << 20;  // 1 MiB
  int max_depth = 64;          // nesting of mappings and sequences
  size_t max_nodes = 100000;   // after alias expansion
};

// Loads sources[index] into a tree. On failure returns nullopt and adds located diagnostics to the sink.
// An empty or comment-only text gives a null node (the caller decides whether that is an error).
std::optional<YamlNode> load_yaml(const std::vector<YamlSource>& sources, int index, DiagnosticSink& sink,
                                  const YamlLimits& limits = {});

// Reports every duplicate key in every mapping of the tree ("duplicate key 'a' (first at line 3)").
void report_duplicate_keys(const YamlNode& root, DiagnosticSink& sink);

// Renders a tree back to YAML text (block style; quoted scalars stay quoted).
std::string emit_yaml(const YamlNode& n);

}  // namespace air

namespace air {

// How a plain scalar's text reads under YAML's core schema.
bool yaml_int_text(std::string_view s);    // 8, -3, +12
bool yaml_float_text(std::string_view s);  // 1.5, 2e-5, .inf
bool yaml_bool_text(std::string_view s);   // true/false, yes/no, on/off (any case)

}  // namespace air
