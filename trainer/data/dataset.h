// From record files to tokenized examples: every file read in its format (trainer/data/records.h), each
// record rendered (Alpaca's prompt, plain text, or the chat template: trainer/data/chat.h) and tokenized with
// its trained tokens, on all cores. Bad records and records with no trained token (within max_seq_len) are
// errors or skipped and counted. No libtorch (library air_data).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "trainer/data/chat.h"
#include "trainer/data/example.h"
#include "trainer/data/records.h"

namespace air::train {

struct DataSettings {
  DataFormat format = DataFormat::kAuto;  // dataset_format
  bool skip_bad = false;                  // bad_records: skip
  TrainOn train_on = TrainOn::kAssistant; // for prompt/completion and Alpaca: assistant = the completion / output
  int64_t max_seq_len = 1024;
  int64_t max_examples = 0;  // 0: all
  int threads = 0;           // 0: every core
  bool progress = false;     // a progress line on stderr while tokenizing (set when stderr is a terminal)
};

// Turns one record into an example. Thread-safe.
class ExampleBuilder {
 public:
  ExampleBuilder(const TextEncoder& enc, const ChatTemplate* chat_template, TrainOn train_on);
  // `text` (optional) receives the text the example was tokenized from (the rendered template, or the
  // decoded ids of Alpaca / text records). Throws RecordError.
  Example build(const Record& r, std::string* text = nullptr) const;
  const ChatTemplate* chat_template() const { return tmpl_; }
  const TextEncoder& encoder() const { return enc_; }
  TrainOn train_on() const { return train_on_; }

 private:
  Example build_chat(const Record& r, std::string* text) const;
  const TextEncoder& enc_;
  const ChatTemplate* tmpl_;
  TrainOn train_on_;
};

// Token i is trained when its byte range [first, second) is non-empty and lies inside one of `spans`.
std::vector<uint8_t> mask_from_spans(const std::vector<std::pair<uint32_t, uint32_t>>& offsets, const Spans& spans);

struct DataStats {
  int64_t records = 0;            // records read (good ones)
  int64_t examples = 0;           // examples kept
  int64_t skipped_bad = 0;        // bad records skipped (bad_records: skip)
  int64_t skipped_untrained = 0;  // rows with no trained token within max_seq_len, skipped
  int64_t tokens = 0, trained_tokens = 0, truncated = 0;
  std::map<std::string, int64_t> formats;  // records per format
  std::vector<std::string> skipped_examples;
};

struct LoadedData {
  std::vector<Example> examples;
  DataStats stats;
};

// Every record of `files` as examples, in file order. Throws air::Error listing every bad record (up to 20)
// unless settings.skip_bad. `log` gets one line per file.
LoadedData load_examples(const std::vector<std::string>& files, const DataSettings& settings, const ExampleBuilder& builder,
                         std::ostream& log);

// The same, each kept example handed to `sink` in record order as soon as its chunk is built (the cache
// writes them straight to disk): the records are read, built and freed chunk by chunk, so memory does not
// grow with the dataset (record_stream.h). `stats` gets the counts.
void load_examples_into(const std::vector<std::string>& files, const DataSettings& settings, const ExampleBuilder& builder,
                        std::ostream& log, const std::function<void(Example&&)>& sink, DataStats& stats);

// Reads the records of `files` in order (up to max_records; 0: all), counting what was skipped.
std::vector<Record> read_all_records(const std::vector<std::string>& files, const DataSettings& settings, DataStats& stats,
                                     int64_t max_records, std::ostream* log);

// "tokenizing: 16,384 records (16%), 8,192 records/s, ETA 10s": the terminal's progress line after `seconds`,
// with `done` the fraction of the files' bytes read.
std::string progress_line(size_t records, double done, double seconds);

// "data: 1200 examples (messages 1200), 250000 tokens (mean 208), 60000 trained; 3 longer than max_seq_len
// 1024 (truncated); skipped: 2 bad records, 1 with no trained token"
std::string describe(const DataStats& s, int64_t max_seq_len);

}  // namespace air::train
