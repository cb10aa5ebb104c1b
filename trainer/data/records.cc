// Format detection and checking of one record, and the JSON / JSON Lines / Parquet readers with
// bad_records: error (every bad record reported at once, up to 20) or skip (counted).
#include "trainer/data/records.h"
#include "trainer/data/record_stream.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/base/error.h"
#include "trainer/data/alpaca_record.h"
#include "trainer/data/json_list.h"
#include "trainer/data/parallel.h"
#include "trainer/data/parquet.h"

namespace air::train {
namespace {

constexpr size_t kMaxErrors = 20;
constexpr size_t kSkippedExamples = 5;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string kind_of(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "a list";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    default: return "a number";
  }
}

const nlohmann::json* find(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string need_string(const nlohmann::json& j, const char* key, const std::string& where, const std::string& path) {
  const nlohmann::json* v = find(j, key);
  if (!v || v->is_null()) throw RecordError(where, "missing '" + path + "'");
  if (!v->is_string()) throw RecordError(where, "'" + path + "' must be a string, got " + kind_of(*v));
  return v->get<std::string>();
}

bool known_role(const std::string& r) { return r == "system" || r == "user" || r == "assistant" || r == "tool"; }

// A message's content: a string, a list of parts ({"type": "text", "text": ...}) as the OpenAI form has it,
// or null / absent on an assistant turn that only calls tools.
void check_message(nlohmann::json& m, const std::string& where, const std::string& path) {
  if (!m.is_object()) throw RecordError(where, "'" + path + "' must be an object with role and content, got " + kind_of(m));
  const std::string role = need_string(m, "role", where, path + ".role");
  if (!known_role(role))
    throw RecordError(where, "'" + path + ".role' is '" + role + "', expected system, user, assistant or tool");
  const nlohmann::json* tc = find(m, "tool_calls");
  if (tc && !tc->is_null() && !tc->is_array())
    throw RecordError(where, "'" + path + ".tool_calls' must be a list, got " + kind_of(*tc));
  const bool calls = tc && tc->is_array() && !tc->empty();
  const nlohmann::json* c = find(m, "content");
  if (!c || c->is_null()) {
    if (!calls) throw RecordError(where, "missing '" + path + ".content'");
    return;
  }
  if (c->is_string()) return;
  if (c->is_array()) {
    for (size_t i = 0; i < c->size(); ++i)
      if (!(*c)[i].is_object())
        throw RecordError(where, "'" + path + ".content[" + std::to_string(i) + "]' must be an object like {\"type\": \"text\", \"text\": ...}");
    return;
  }
  throw RecordError(where, "'" + path + ".content' must be a string or a list of parts, got " + kind_of(*c));
}

nlohmann::json message_list(const nlohmann::json& j, const char* key, const std::string& where) {
  const nlohmann::json* v = find(j, key);
  if (!v || v->is_null()) throw RecordError(where, std::string("missing '") + key + "'");
  if (!v->is_array()) throw RecordError(where, std::string("'") + key + "' must be a list of messages, got " + kind_of(*v));
  if (v->empty()) throw RecordError(where, std::string("'") + key + "' is an empty list");
  nlohmann::json out = *v;
  for (size_t i = 0; i < out.size(); ++i) check_message(out[i], where, std::string(key) + "[" + std::to_string(i) + "]");
  return out;
}

// ShareGPT's speakers mapped to roles (FastChat's names, plus the roles themselves).
std::optional<std::string> sharegpt_role(const std::string& from) {
  if (from == "human" || from == "user") return "user";
  if (from == "gpt" || from == "assistant" || from == "model") return "assistant";
  if (from == "system") return "system";
  if (from == "tool" || from == "observation" || from == "function_response") return "tool";
  return std::nullopt;
}

nlohmann::json sharegpt_messages(const nlohmann::json& j, const std::string& where) {
  const char* key = find(j, "conversations") ? "conversations" : "messages";
  const nlohmann::json* v = find(j, key);
  if (!v || v->is_null()) throw RecordError(where, "missing 'conversations'");
  if (!v->is_array()) throw RecordError(where, std::string("'") + key + "' must be a list of turns, got " + kind_of(*v));
  if (v->empty()) throw RecordError(where, std::string("'") + key + "' is an empty list");
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string path = std::string(key) + "[" + std::to_string(i) + "]";
    const nlohmann::json& t = (*v)[i];
    if (!t.is_object()) throw RecordError(where, "'" + path + "' must be an object with from and value, got " + kind_of(t));
    const std::string from = need_string(t, "from", where, path + ".from");
    auto role = sharegpt_role(from);
    if (!role)
      throw RecordError(where, "'" + path + ".from' is '" + from + "', expected human, gpt, system or tool");
    out.push_back({{"role", *role}, {"content", need_string(t, "value", where, path + ".value")}});
  }
  return out;
}

// The start of an error for a record's tools list.
nlohmann::json tools_of(const nlohmann::json& j, const std::string& where) {
  const nlohmann::json* t = find(j, "tools");
  if (!t || t->is_null()) return nullptr;
  if (t->is_string()) {  // Parquet and some JSON datasets keep tools as JSON text
    auto parsed = nlohmann::json::parse(t->get<std::string>(), nullptr, false);
    if (parsed.is_discarded() || !parsed.is_array()) throw RecordError(where, "'tools' is a string that is not a JSON list");
    return parsed;
  }
  if (!t->is_array()) throw RecordError(where, "'tools' must be a list, got " + kind_of(*t));
  return *t;
}

Record prompt_completion(const nlohmann::json& j, const std::string& where) {
  Record r;
  r.format = DataFormat::kPromptCompletion;
  const nlohmann::json* p = find(j, "prompt");
  const nlohmann::json* c = find(j, "completion");
  if (!p || p->is_null()) throw RecordError(where, "missing 'prompt'");
  if (!c || c->is_null()) throw RecordError(where, "missing 'completion'");
  if (p->is_string() && c->is_string()) {
    r.prompt = p->get<std::string>();
    r.completion = c->get<std::string>();
    return r;
  }
  // Conversational: a message list on either side (a string side is one user / one assistant message).
  auto side = [&](const nlohmann::json& v, const char* key, const char* role) {
    if (v.is_string()) return nlohmann::json::array({{{"role", role}, {"content", v.get<std::string>()}}});
    return message_list(j, key, where);
  };
  if (!(p->is_string() || p->is_array())) throw RecordError(where, "'prompt' must be a string or a list of messages, got " + kind_of(*p));
  if (!(c->is_string() || c->is_array())) throw RecordError(where, "'completion' must be a string or a list of messages, got " + kind_of(*c));
  nlohmann::json msgs = side(*p, "prompt", "user");
  r.completion_start = msgs.size();
  for (auto& m : side(*c, "completion", "assistant")) msgs.push_back(std::move(m));
  r.messages = std::move(msgs);
  return r;
}

}  // namespace

const char* format_name(DataFormat f) {
  switch (f) {
    case DataFormat::kAuto: return "auto";
    case DataFormat::kAlpaca: return "alpaca";
    case DataFormat::kMessages: return "messages";
    case DataFormat::kShareGpt: return "sharegpt";
    case DataFormat::kPromptCompletion: return "prompt_completion";
    case DataFormat::kText: return "text";
  }
  return "?";
}

std::optional<DataFormat> parse_format(const std::string& name) {
  for (auto f : {DataFormat::kAuto, DataFormat::kAlpaca, DataFormat::kMessages, DataFormat::kShareGpt,
                 DataFormat::kPromptCompletion, DataFormat::kText})
    if (name == format_name(f)) return f;
  return std::nullopt;
}

std::optional<DataFormat> detect_format(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  for (const char* key : {"messages", "conversations"}) {
    const nlohmann::json* v = find(j, key);
    if (!v || !v->is_array()) continue;
    const nlohmann::json* first = v->empty() || !(*v)[0].is_object() ? nullptr : &(*v)[0];
    if (first && find(*first, "from")) return DataFormat::kShareGpt;
    return DataFormat::kMessages;
  }
  if (find(j, "prompt") && find(j, "completion")) return DataFormat::kPromptCompletion;
  if (find(j, "instruction") && find(j, "output")) return DataFormat::kAlpaca;
  if (find(j, "text")) return DataFormat::kText;
  return std::nullopt;
}

Record record_from_json(const nlohmann::json& j, DataFormat format, const std::string& where) {
  if (!j.is_object()) throw RecordError(where, "expected an object (one record), got " + kind_of(j));
  Record r;
  switch (format) {
    case DataFormat::kAlpaca:
      try {
        r.alpaca = alpaca_from_json(j, "");
      } catch (const Error& e) {  // alpaca_from_json's message starts with the empty `where`: ": ..."
        std::string m = e.what();
        throw RecordError(where, m.rfind(": ", 0) == 0 ? m.substr(2) : m);
      }
      break;
    case DataFormat::kMessages:
      r.messages = message_list(j, find(j, "conversations") && !find(j, "messages") ? "conversations" : "messages", where);
      break;
    case DataFormat::kShareGpt:
      r.messages = sharegpt_messages(j, where);
      break;
    case DataFormat::kPromptCompletion:
      r = prompt_completion(j, where);
      break;
    case DataFormat::kText:
      r.text = need_string(j, "text", where, "text");
      break;
    case DataFormat::kAuto:
      throw RecordError(where, "no format given");
  }
  r.format = format;
  if (r.is_conversation()) r.tools = tools_of(j, where);
  r.where = where;
  return r;
}

namespace {

// Collects good records and bad ones by the policy; `fail()` throws every bad record at once.
class Collector {
 public:
  Collector(const std::string& path, const ReadOptions& o, const RecordSink* sink = nullptr) : path_(path), o_(o), sink_(sink) {}
  bool full() const { return o_.max_records > 0 && taken_ >= o_.max_records; }
  // With a sink: hands the records taken so far to it (`done`: the fraction of the file read).
  void flush(double done) {
    if (!sink_ || !errors_.empty() || out_.records.empty()) return;
    (*sink_)(std::move(out_.records), done);
    out_.records.clear();
  }
  // Detects the file's format from its first record when auto; false (and a bad record) if it cannot.
  bool settle_format(const nlohmann::json& j, const std::string& where) {
    if (out_.format != DataFormat::kAuto) return true;
    auto f = o_.format != DataFormat::kAuto ? std::optional<DataFormat>(o_.format) : detect_format(j);
    if (!f) {
      std::string keys;
      if (j.is_object())
        for (const auto& [k, _] : j.items()) keys += (keys.empty() ? "" : ", ") + k;
      bad(where + ": cannot tell the dataset's format from its first record (keys: " + keys + ")");
      return false;
    }
    out_.format = *f;
    return true;
  }
  void add(const nlohmann::json& j, const std::string& where) {
    if (!settle_format(j, where)) return;
    try {
      out_.records.push_back(record_from_json(j, out_.format, where));
      ++taken_;
    } catch (const RecordError& e) {
      bad(e.what());
    }
  }
  void take(Record r) {
    out_.records.push_back(std::move(r));
    ++taken_;
  }
  void bad(const std::string& message) {
    if (o_.skip_bad) {
      ++out_.skipped;
      if (out_.skipped_examples.size() < kSkippedExamples) out_.skipped_examples.push_back(message);
    } else {
      ++errors_total_;
      if (errors_.size() < kMaxErrors) errors_.push_back(message);
    }
  }
  bool too_many() const { return !o_.skip_bad && errors_.size() >= kMaxErrors; }
  ReadResult finish() {
    if (!errors_.empty()) {
      std::string all;
      for (const auto& e : errors_) all += (all.empty() ? "" : "\n") + e;
      if (errors_total_ > errors_.size()) all += "\n(and more)";
      throw Error(all + "\n" + std::to_string(errors_total_) + (errors_total_ > errors_.size() ? "+" : "") + " bad record" +
                      (errors_total_ > 1 ? "s" : "") + " in " + path_,
                  hint());
    }
    flush(1.0);
    return std::move(out_);
  }
  DataFormat format() const { return out_.format; }

 private:
  std::string hint() const {
    std::string h = "fix the records, or set bad_records: skip to leave them out (counted in the log)";
    if (o_.format == DataFormat::kAuto && out_.format != DataFormat::kAuto)
      h += "; the format was detected as " + std::string(format_name(out_.format)) + " (set dataset_format to force one)";
    return h;
  }
  std::string path_;
  ReadOptions o_;
  ReadResult out_;
  std::vector<std::string> errors_;
  size_t errors_total_ = 0;
  int64_t taken_ = 0;
  const RecordSink* sink_;
};

// Records parsed, built and handed on together: 16,384, or fewer when they pass 8 MiB of text (long
// records), so a chunk's memory stays bounded whatever the records' size.
constexpr size_t kChunk = 16384, kChunkBytes = size_t{8} << 20;

// One chunk of record texts (where, JSON text) parsed and checked on every core, then taken in order; the
// first record of the file settles its format first.
void take_chunk(Collector& c, std::vector<std::pair<std::string, std::string>>& items) {
  struct Parsed {
    std::optional<Record> record;
    std::string error;
  };
  size_t from = 0;
  while (c.format() == DataFormat::kAuto && from < items.size()) {
    const auto& [where, text] = items[from++];
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) c.bad(where + ": not valid JSON");
    else c.add(j, where);
  }
  const DataFormat f = c.format();
  std::vector<Parsed> parsed(items.size() - from);
  parallel_for(parsed.size(), [&](size_t k) {
    const auto& [where, text] = items[from + k];
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) {
      parsed[k].error = where + ": not valid JSON";
      return;
    }
    try {
      parsed[k].record = record_from_json(j, f, where);
    } catch (const RecordError& e) {
      parsed[k].error = e.what();
    }
  });
  for (auto& p : parsed) {
    if (c.full() || c.too_many()) break;
    if (p.record) c.take(std::move(*p.record));
    else c.bad(p.error);
  }
}

double fraction(int64_t at, double bytes) { return at < 0 || !(bytes > 0) ? 1.0 : std::min(1.0, static_cast<double>(at) / bytes); }

// JSON Lines: lines read in chunks, each chunk's records parsed on every core (take_chunk).
ReadResult read_jsonl(const std::string& path, const ReadOptions& o, const RecordSink* sink = nullptr) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read dataset " + path);
  std::error_code ec;
  const auto bytes = static_cast<double>(std::filesystem::file_size(path, ec));
  Collector c(path, o, sink);
  std::vector<std::pair<std::string, std::string>> items;
  int n = 0;
  bool eof = false;
  while (!eof && !c.full() && !c.too_many()) {
    items.clear();
    std::string line;
    size_t text_bytes = 0;
    while (items.size() < kChunk && text_bytes < kChunkBytes && !(eof = !std::getline(in, line)))
      if (++n, line.find_first_not_of(" \t\r") != std::string::npos) {
        text_bytes += line.size();
        items.emplace_back(path + ":" + std::to_string(n), std::move(line));
      }
    if (items.empty()) break;
    take_chunk(c, items);
    c.flush(eof ? 1.0 : fraction(in.tellg(), bytes));
  }
  return c.finish();
}

// One JSON list: its elements read in chunks (JsonListReader), each chunk parsed on every core, so the file
// is never held whole. A record that is not valid JSON is a bad record like a JSONL line; a file that is
// not one list (or ends inside it) is an error naming its line.
ReadResult read_json(const std::string& path, const ReadOptions& o, const RecordSink* sink = nullptr) {
  JsonListReader list(path);
  std::error_code ec;
  const auto bytes = static_cast<double>(std::filesystem::file_size(path, ec));
  Collector c(path, o, sink);
  std::vector<std::pair<std::string, std::string>> items;
  bool more = true;
  while (more && !c.full() && !c.too_many()) {
    items.clear();
    std::string text;
    int64_t line = 0;
    size_t text_bytes = 0;
    while (items.size() < kChunk && text_bytes < kChunkBytes && (more = list.next(text, line))) {
      text_bytes += text.size();
      items.emplace_back(path + ": record " + std::to_string(list.elements() - 1), std::move(text));
    }
    if (items.empty()) break;
    take_chunk(c, items);
    c.flush(more ? fraction(list.offset(), bytes) : 1.0);
  }
  return c.finish();
}

// Parquet: flat string columns. Conversations are stored as JSON text in the `messages` / `conversations`
// column (the reader has no nested list<struct> columns); prompt / completion / text / Alpaca are strings.
// Read one row group at a time: its string columns decoded, its rows' records built and handed on, then
// freed, so memory holds one row group (writers make them about 64-128 MiB or 1M rows at most).
ReadResult read_parquet(const std::string& path, const ReadOptions& o, const RecordSink* sink = nullptr) {
  data::ParquetFile f(path);
  auto has = [&](const char* n) { return f.find_column(n) >= 0; };
  DataFormat fmt = o.format;
  if (fmt == DataFormat::kAuto) {
    if (has("messages")) fmt = DataFormat::kMessages;
    else if (has("conversations")) fmt = DataFormat::kShareGpt;  // refined below from the first row's keys
    else if (has("prompt") && has("completion")) fmt = DataFormat::kPromptCompletion;
    else if (has("instruction") && has("output")) fmt = DataFormat::kAlpaca;
    else if (has("text")) fmt = DataFormat::kText;
    else {
      std::string cols;
      for (const auto& col : f.columns()) cols += (cols.empty() ? "" : ", ") + col.name;
      throw Error(path + ": cannot tell the dataset's format from its columns (" + cols + ")",
                  "set dataset_format: alpaca, messages, sharegpt, prompt_completion or text");
    }
  }
  std::vector<std::string> names;
  for (const auto& col : f.columns())
    if (col.type == data::PhysicalType::kByteArray) names.push_back(col.name);
  // Every string column of row group g as JSON values per row (null where the row has none); JSON-text
  // columns parsed.
  auto group_rows = [&](size_t g) {
    std::vector<nlohmann::json> objs(static_cast<size_t>(f.meta().row_groups[g].num_rows), nlohmann::json::object());
    for (const auto& name : names) {
      data::ColumnData col = f.read_column(f.find_column(name), g);
      const bool json_text = name == "messages" || name == "conversations" || name == "tools" ||
                             (fmt == DataFormat::kPromptCompletion && (name == "prompt" || name == "completion"));
      size_t v = 0;
      for (size_t r = 0; r < col.present.size() && r < objs.size(); ++r) {
        if (!col.present[r]) {
          objs[r][name] = nullptr;
          continue;
        }
        std::string& s = col.values.bytes[v++];
        nlohmann::json parsed = json_text && !s.empty() && (s[0] == '[' || s[0] == '{') ? nlohmann::json::parse(s, nullptr, false)
                                                                                         : nlohmann::json(nlohmann::json::value_t::discarded);
        // A prompt / completion string that merely looks like JSON stays a string unless it is a message list.
        if (!parsed.is_discarded() && (name == "prompt" || name == "completion") &&
            !(parsed.is_array() && !parsed.empty() && parsed[0].is_object() && parsed[0].contains("role")))
          parsed = nlohmann::json(nlohmann::json::value_t::discarded);
        objs[r][name] = parsed.is_discarded() ? nlohmann::json(std::move(s)) : std::move(parsed);
      }
    }
    return objs;
  };
  std::optional<Collector> c;  // made once the first row has settled the format
  auto collector = [&](const std::vector<nlohmann::json>& first) -> Collector& {
    if (!c) {
      if (o.format == DataFormat::kAuto && fmt == DataFormat::kShareGpt && !first.empty())
        fmt = detect_format(first[0]).value_or(fmt);
      ReadOptions forced = o;
      forced.format = fmt;
      c.emplace(path, forced, sink);
    }
    return *c;
  };
  const size_t groups = f.meta().row_groups.size();
  for (size_t g = 0; g < groups && !(c && (c->full() || c->too_many())); ++g) {
    std::vector<nlohmann::json> objs = group_rows(g);
    if (objs.empty()) continue;
    Collector& cc = collector(objs);
    for (size_t i = 0; i < objs.size() && !cc.full() && !cc.too_many(); ++i)
      cc.add(objs[i], path + ": row group " + std::to_string(g) + ", row " + std::to_string(i));
    objs.clear();
    cc.flush(static_cast<double>(g + 1) / static_cast<double>(groups));
  }
  return collector({}).finish();
}

}  // namespace

ReadResult read_records(const std::string& path, const ReadOptions& options) {
  if (ends_with(path, ".jsonl")) return read_jsonl(path, options);
  if (ends_with(path, ".parquet")) return read_parquet(path, options);
  return read_json(path, options);
}

ReadResult read_records_chunked(const std::string& path, const ReadOptions& options, const RecordSink& sink) {
  if (ends_with(path, ".jsonl")) return read_jsonl(path, options, &sink);
  if (ends_with(path, ".parquet")) return read_parquet(path, options, &sink);
  return read_json(path, options, &sink);
}

}  // namespace air::train
