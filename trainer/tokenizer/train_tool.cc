// air-tokenizer-train (see bpe_train_tool.h).
#include "trainer/tokenizer/train_tool.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "trainer/tokenizer/bpe_train.h"

namespace air::train {
namespace {

using Json = nlohmann::json;

constexpr const char* kUsage =
    "usage: air-tokenizer-train [--vocab-size N] [--min-frequency N] [--special TOKEN]... -o OUT_DIR INPUT...\n"
    "  Trains a byte-level BPE tokenizer (Llama 3 pre-tokenizer) on INPUT files (.json Alpaca array,\n"
    "  .jsonl, or plain text) and writes OUT_DIR/tokenizer.json and OUT_DIR/tokenizer_config.json.\n"
    "  --vocab-size N     total vocabulary, special tokens included (default 1024)\n"
    "  --min-frequency N  never merge a pair seen fewer than N times (default 2)\n"
    "  --special TOKEN    special tokens, BOS first (default <|begin_of_text|> <|end_of_text|> <|pad|>)\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string field(const Json& record, const char* key, const std::string& where) {
  auto it = record.find(key);
  if (it == record.end() || it->is_null()) return "";
  if (!it->is_string()) throw std::runtime_error(where + ": \"" + key + "\" must be a string");
  return it->get<std::string>();
}

std::string text_of_record(const Json& r, const std::string& where) {
  if (r.is_string()) return r.get<std::string>();
  if (!r.is_object()) throw std::runtime_error(where + ": expected an object or a string");
  if (r.contains("text")) return field(r, "text", where);
  if (!r.contains("instruction") && !r.contains("output")) {
    throw std::runtime_error(where + ": expected Alpaca fields (instruction, input, output) or \"text\"");
  }
  return alpaca_text(field(r, "instruction", where), field(r, "input", where), field(r, "output", where));
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Writes next to the target and renames, so a failure never leaves a half-written file behind.
void write_atomically(const std::filesystem::path& path, const std::string& data) {
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << data;
    f.flush();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw std::runtime_error(path.string() + ": cannot write: " + std::strerror(errno));
    }
  }
  std::filesystem::rename(tmp, path);
}

int64_t parse_number(const std::string& flag, const std::string& value) {
  try {
    size_t used = 0;
    long long v = std::stoll(value, &used);
    if (used == value.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw UsageError(flag + " expects a positive integer, got '" + value + "'");
}

}  // namespace

std::string alpaca_text(const std::string& instruction, const std::string& input, const std::string& output) {
  std::string text = "### Instruction:\n" + instruction + "\n\n";
  if (!input.empty()) text += "### Input:\n" + input + "\n\n";
  return text + "### Response:\n" + output;
}

std::vector<std::string> read_training_texts(const std::string& path) {
  std::string data = slurp(path);
  std::vector<std::string> texts;
  if (ends_with(path, ".jsonl")) {
    std::istringstream lines(data);
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      Json r = Json::parse(line, nullptr, false);
      std::string where = path + ":" + std::to_string(n);
      if (r.is_discarded()) throw std::runtime_error(where + ": not valid JSON");
      texts.push_back(text_of_record(r, where));
    }
  } else if (ends_with(path, ".json")) {
    Json doc = Json::parse(data, nullptr, false);
    if (doc.is_discarded()) throw std::runtime_error(path + ": not valid JSON");
    if (!doc.is_array()) throw std::runtime_error(path + ": expected a JSON array of records");
    for (size_t i = 0; i < doc.size(); ++i) {
      texts.push_back(text_of_record(doc[i], path + ": record " + std::to_string(i)));
    }
  } else {
    texts.push_back(std::move(data));
  }
  return texts;
}

int run_tokenizer_train(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    BpeTrainOptions options;
    std::vector<std::string> specials, inputs;
    std::string out_dir;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&]() -> const std::string& {
        if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
        return args[++i];
      };
      if (a == "-h" || a == "--help") {
        out << kUsage;
        return 0;
      } else if (a == "--vocab-size") {
        options.vocab_size = static_cast<int32_t>(std::min<int64_t>(parse_number(a, value()), 1 << 24));
      } else if (a == "--min-frequency") {
        options.min_frequency = parse_number(a, value());
      } else if (a == "--special") {
        specials.push_back(value());
      } else if (a == "-o" || a == "--output") {
        out_dir = value();
      } else if (!a.empty() && a[0] == '-') {
        throw UsageError("unknown option '" + a + "'");
      } else {
        inputs.push_back(a);
      }
    }
    if (out_dir.empty()) throw UsageError("-o OUT_DIR is required");
    if (inputs.empty()) throw UsageError("no INPUT files given");
    if (!specials.empty()) options.special_tokens = specials;

    auto start = std::chrono::steady_clock::now();
    BpeTrainer trainer(options);
    size_t texts = 0;
    for (const std::string& path : inputs) {
      for (const std::string& t : read_training_texts(path)) {
        trainer.add_text(t);
        ++texts;
      }
    }
    BpeTrainResult result = trainer.train();
    std::filesystem::create_directories(out_dir);
    write_atomically(std::filesystem::path(out_dir) / "tokenizer.json", trainer.to_tokenizer_json(result));
    write_atomically(std::filesystem::path(out_dir) / "tokenizer_config.json", trainer.to_tokenizer_config_json());
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out << "air-tokenizer-train: " << texts << " texts, " << result.words << " words (" << result.distinct_words
        << " distinct), " << result.merges.size() << " merges, vocabulary "
        << result.tokens.size() + options.special_tokens.size() << " (" << options.special_tokens.size()
        << " special) in " << secs << " s -> " << out_dir << "/tokenizer.json\n";
    return 0;
  } catch (const UsageError& e) {
    err << "air-tokenizer-train: error: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const std::invalid_argument& e) {
    err << "air-tokenizer-train: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    err << "air-tokenizer-train: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace air::train
