// Training records of every format people bring (Alpaca, OpenAI / Hugging Face `messages`, ShareGPT
// `conversations`, prompt / completion, plain `text`), read from JSON, JSON Lines or Parquet with the format
// detected per file or forced. A malformed record is a located error: the file and line (or the Parquet row
// group and row) and the field. No libtorch (library air_data).
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/data/alpaca.h"

namespace air::train {

enum class DataFormat { kAuto, kAlpaca, kMessages, kShareGpt, kPromptCompletion, kText };

const char* format_name(DataFormat f);
std::optional<DataFormat> parse_format(const std::string& name);  // auto|alpaca|messages|sharegpt|prompt_completion|text

// One record. Conversations (messages, sharegpt, prompt_completion with message lists) keep every message as
// JSON with a checked `role` (system / user / assistant / tool) and `content`, and every other field
// (tool_calls, name, tool_call_id, reasoning_content, ...) as it came, for the chat template to use.
struct Record {
  DataFormat format = DataFormat::kAlpaca;  // never kAuto
  AlpacaRecord alpaca;                      // kAlpaca
  std::string text;                         // kText
  std::string prompt, completion;           // kPromptCompletion with two strings (is_conversation() false)
  nlohmann::json messages;                  // conversations: an array of message objects
  size_t completion_start = 0;              // prompt_completion lists: index of the first completion message
  nlohmann::json tools;                     // the record's `tools` list (null when absent)
  std::string where;                        // "file:line" or "file: row group G, row R"

  bool is_conversation() const { return messages.is_array(); }
};

// A record that cannot be used: `where` it is, the field path and what was expected.
class RecordError : public std::runtime_error {
 public:
  RecordError(const std::string& where, const std::string& message)
      : std::runtime_error(where.empty() ? message : where + ": " + message) {}
};

// The format a record's keys say ("messages" -> messages, "conversations" -> sharegpt or messages by its
// items' keys, "prompt"+"completion", "instruction"+"output" -> alpaca, "text"); nullopt when none fits.
std::optional<DataFormat> detect_format(const nlohmann::json& record);
// One JSON object in `format` (not kAuto); throws RecordError naming the field ("messages[2].role").
Record record_from_json(const nlohmann::json& j, DataFormat format, const std::string& where);

struct ReadOptions {
  DataFormat format = DataFormat::kAuto;
  bool skip_bad = false;    // bad_records: skip (count them) instead of error
  int64_t max_records = 0;  // stop after this many good records (0: all)
};

struct ReadResult {
  std::vector<Record> records;
  DataFormat format = DataFormat::kAuto;  // the file's (detected or forced)
  int64_t skipped = 0;                    // bad records skipped (skip_bad)
  std::vector<std::string> skipped_examples;  // the first few skipped records' errors, for the log
};

// By extension: .jsonl (one record per line), .parquet, else .json (a list of records). With skip_bad false,
// every bad record (up to 20) is reported at once in one air::Error.
ReadResult read_records(const std::string& path, const ReadOptions& options);

}  // namespace air::train
