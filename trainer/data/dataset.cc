// Records to examples: rendering, tokenizing with offsets, masks from trained spans, and the parallel pass.
#include "trainer/data/dataset.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <mutex>

#include "core/base/error.h"
#include "trainer/data/parallel.h"
#include "trainer/data/record_stream.h"
#include "trainer/tokenizer/tokenizer.h"

namespace air::train {
namespace {

constexpr size_t kMaxErrors = 20;

// [bos] prompt completion eos, the completion (and eos) trained; everything with train_on: all.
Example plain_pair(const std::string& prompt, const std::string& completion, const TextEncoder& enc, TrainOn on) {
  Example e;
  if (enc.bos) e.ids.push_back(*enc.bos);
  auto p = enc.encode(prompt);
  e.ids.insert(e.ids.end(), p.begin(), p.end());
  e.prompt_len = on == TrainOn::kAll ? 0 : static_cast<int64_t>(e.ids.size());
  auto c = enc.encode(completion);
  e.ids.insert(e.ids.end(), c.begin(), c.end());
  e.ids.push_back(enc.eos);
  return e;
}

// One file read: its log line ("data: f.jsonl: 1200 messages records (detected)") and its counts.
void count_file(const std::string& file, int64_t records, ReadResult& rr, const DataSettings& settings, DataStats& stats,
                std::ostream* log) {
  if (log)
    *log << "data: " << file << ": " << records << " " << format_name(rr.format) << " records"
         << (settings.format == DataFormat::kAuto ? " (detected)" : "")
         << (rr.skipped ? ", " + std::to_string(rr.skipped) + " bad ones skipped" : "") << "\n";
  stats.skipped_bad += rr.skipped;
  for (auto& m : rr.skipped_examples)
    if (stats.skipped_examples.size() < 5) stats.skipped_examples.push_back(std::move(m));
  stats.formats[format_name(rr.format)] += records;
}

}  // namespace

std::vector<uint8_t> mask_from_spans(const std::vector<std::pair<uint32_t, uint32_t>>& offsets, const Spans& spans) {
  std::vector<uint8_t> mask(offsets.size(), 0);
  size_t s = 0;
  for (size_t i = 0; i < offsets.size(); ++i) {
    const auto [a, b] = offsets[i];
    if (a >= b) continue;  // added by the post-processor: no text
    while (s < spans.size() && spans[s].second <= a) ++s;
    mask[i] = s < spans.size() && spans[s].first <= a && b <= spans[s].second;
  }
  return mask;
}

ExampleBuilder::ExampleBuilder(const TextEncoder& enc, const ChatTemplate* chat_template, TrainOn train_on)
    : enc_(enc), tmpl_(chat_template), train_on_(train_on) {}

Example ExampleBuilder::build_chat(const Record& r, std::string* text) const {
  if (!enc_.tokenizer) throw Error("chat data needs the tokenizer's offsets (no tokenizer given)");
  std::optional<Record> pair;  // a prompt / completion string pair: one user turn, one assistant turn
  if (!r.is_conversation()) {
    pair = r;
    pair->messages = nlohmann::json::array({{{"role", "user"}, {"content", r.prompt}}, {{"role", "assistant"}, {"content", r.completion}}});
    pair->completion_start = 1;
  }
  RenderedRecord rr = render_conversation(*tmpl_, pair ? *pair : r, train_on_);
  // As transformers' apply_chat_template(tokenize=True): the template writes any BOS, none is added.
  Tokenizer::Encoding enc = enc_.tokenizer->encode_with_offsets(rr.text, false);
  Example e;
  e.mask = mask_from_spans(enc.offsets, rr.trained);
  e.ids = std::move(enc.ids);
  if (text) *text = std::move(rr.text);
  return e;
}

Example ExampleBuilder::build(const Record& r, std::string* text) const {
  Example e;
  switch (r.format) {
    case DataFormat::kAlpaca:
      e = make_example(r.alpaca, enc_);
      if (train_on_ == TrainOn::kAll) e.prompt_len = 0;
      break;
    case DataFormat::kText:  // continued pre-training: every token
      e = plain_pair("", r.text, enc_, TrainOn::kAll);
      break;
    case DataFormat::kPromptCompletion:
      if (!tmpl_ && !r.is_conversation()) {
        e = plain_pair(r.prompt, r.completion, enc_, train_on_);
        break;
      }
      [[fallthrough]];
    case DataFormat::kMessages:
    case DataFormat::kShareGpt:
      if (!tmpl_)
        throw Error(std::string(format_name(r.format)) + " records need a chat template, and the tokenizer has none",
                    "set chat_template: to a Jinja file, or use a tokenizer whose tokenizer_config.json has chat_template");
      return build_chat(r, text);
    case DataFormat::kAuto:
      throw Error("a record without a format");
  }
  if (text && enc_.tokenizer) *text = enc_.tokenizer->decode(e.ids);
  return e;
}

std::vector<Record> read_all_records(const std::vector<std::string>& files, const DataSettings& settings, DataStats& stats,
                                     int64_t max_records, std::ostream* log) {
  std::vector<Record> records;
  for (const auto& file : files) {
    if (max_records > 0 && static_cast<int64_t>(records.size()) >= max_records) break;
    ReadOptions ro{settings.format, settings.skip_bad, max_records > 0 ? max_records - static_cast<int64_t>(records.size()) : 0};
    ReadResult rr = read_records(file, ro);
    count_file(file, static_cast<int64_t>(rr.records.size()), rr, settings, stats, log);
    for (auto& r : rr.records) records.push_back(std::move(r));
  }
  stats.records = static_cast<int64_t>(records.size());
  return records;
}

void load_examples_into(const std::vector<std::string>& files, const DataSettings& settings, const ExampleBuilder& builder,
                        std::ostream& log, const std::function<void(Example&&)>& sink, DataStats& st) {
  // Records come from the readers in chunks (trainer/data/record_stream.h) and each chunk is built on every
  // core, its examples handed to `sink` in record order and freed: the pass holds one chunk of records and
  // examples, whatever the dataset's size.
  const size_t threads = settings.threads > 0 ? static_cast<size_t>(settings.threads) : 0;
  std::vector<Example> built;
  std::vector<std::string> error, errors;
  std::vector<uint8_t> failed;
  size_t error_total = 0;
  std::atomic<bool> fatal{false};
  std::string fatal_message, fatal_hint;
  std::mutex fatal_mu;
  const auto t0 = std::chrono::steady_clock::now();
  auto build = [&](std::vector<Record>& records) {
    const size_t m = records.size();
    built.assign(m, Example{});
    error.assign(m, std::string());
    failed.assign(m, 0);
    parallel_for(
        m,
        [&](size_t k) {
          if (fatal) return;
          try {
            built[k] = builder.build(records[k]);
          } catch (const RecordError& e) {
            failed[k] = 1;
            error[k] = e.what();
          } catch (const Error& e) {  // not the record's fault (no template): stop
            std::lock_guard<std::mutex> lock(fatal_mu);
            if (!fatal.exchange(true)) fatal_message = e.what(), fatal_hint = e.hint();
          }
          records[k] = Record{};
        },
        threads, 32);
    if (fatal) throw Error(fatal_message, fatal_hint);
    for (size_t k = 0; k < m; ++k) {
      if (failed[k]) {
        if (!settings.skip_bad) {
          if (errors.size() < kMaxErrors) errors.push_back(error[k]);
          ++error_total;
        } else {
          ++st.skipped_bad;
          if (st.skipped_examples.size() < 5) st.skipped_examples.push_back(error[k]);
        }
        continue;
      }
      Example& e = built[k];
      const int64_t len = std::min<int64_t>(static_cast<int64_t>(e.ids.size()), settings.max_seq_len);
      const int64_t trained = e.targets_within(len);
      if (trained == 0) {
        ++st.skipped_untrained;
        continue;
      }
      st.tokens += static_cast<int64_t>(e.ids.size());
      st.trained_tokens += trained;
      st.truncated += static_cast<int64_t>(e.ids.size()) > settings.max_seq_len;
      ++st.examples;
      if (errors.empty()) sink(std::move(e));
    }
  };
  // Progress by bytes read (the record count is known only at the end).
  double total_bytes = 0, done_bytes = 0;
  std::vector<double> sizes;
  for (const auto& f : files) {
    std::error_code ec;
    sizes.push_back(static_cast<double>(std::filesystem::file_size(f, ec)));
    total_bytes += sizes.back();
  }
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const std::string& file = files[fi];
    if (settings.max_examples > 0 && st.records >= settings.max_examples) break;
    ReadOptions ro{settings.format, settings.skip_bad, settings.max_examples > 0 ? settings.max_examples - st.records : 0};
    int64_t got = 0;
    ReadResult rr = read_records_chunked(file, ro, [&](std::vector<Record>&& chunk, double done) {
      got += static_cast<int64_t>(chunk.size());
      st.records += static_cast<int64_t>(chunk.size());
      build(chunk);
      if (settings.progress && total_bytes > 0)
        std::cerr << "\r\x1b[K"
                  << progress_line(static_cast<size_t>(st.records), (done_bytes + done * sizes[fi]) / total_bytes,
                                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count())
                  << std::flush;
    });
    done_bytes += sizes[fi];
    if (settings.progress && total_bytes > 0) std::cerr << "\r\x1b[K" << std::flush;  // the file's log line says the rest
    count_file(file, got, rr, settings, st, &log);
  }
  if (!errors.empty()) {
    std::string all;
    for (const auto& e : errors) all += (all.empty() ? "" : "\n") + e;
    throw Error(all + "\n" + std::to_string(error_total) + " record" + (error_total > 1 ? "s" : "") + " could not be rendered",
                "fix the records, or set bad_records: skip to leave them out (counted in the log)");
  }
}

LoadedData load_examples(const std::vector<std::string>& files, const DataSettings& settings, const ExampleBuilder& builder,
                         std::ostream& log) {
  LoadedData out;
  load_examples_into(files, settings, builder, log, [&](Example&& e) { out.examples.push_back(std::move(e)); }, out.stats);
  return out;
}

namespace {

std::string thousands(uint64_t v) {
  std::string s = std::to_string(v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

}  // namespace

std::string progress_line(size_t records, double done, double seconds) {
  const double rate = seconds > 0 ? static_cast<double>(records) / seconds : 0;
  done = std::clamp(done, 0.0, 1.0);
  std::string out = "tokenizing: " + thousands(records) + " records (" + std::to_string(static_cast<int>(done * 100)) + "%), " +
                    thousands(static_cast<uint64_t>(rate)) + " records/s";
  if (done > 0 && done < 1) {
    const auto eta = static_cast<uint64_t>(seconds * (1 - done) / done + 0.5);
    out += ", ETA " + (eta >= 3600 ? std::to_string(eta / 3600) + "h" + std::to_string(eta % 3600 / 60) + "m"
                       : eta >= 60 ? std::to_string(eta / 60) + "m" + (eta % 60 < 10 ? "0" : "") + std::to_string(eta % 60) + "s"
                                   : std::to_string(eta) + "s");
  }
  return out;
}

std::string describe(const DataStats& s, int64_t max_seq_len) {
  const int64_t n = s.examples;
  std::string formats;
  for (const auto& [f, k] : s.formats) formats += (formats.empty() ? "" : ", ") + f + " " + std::to_string(k);
  std::string out = "data: " + std::to_string(n) + " examples (" + formats + "), " + std::to_string(s.tokens) + " tokens (mean " +
                    std::to_string(n > 0 ? s.tokens / n : 0) + "), " + std::to_string(s.trained_tokens) + " trained; " +
                    std::to_string(s.truncated) + " longer than max_seq_len " + std::to_string(max_seq_len) + " (truncated)";
  if (s.skipped_bad || s.skipped_untrained)
    out += "; skipped: " + std::to_string(s.skipped_bad) + " bad records, " + std::to_string(s.skipped_untrained) +
           " with no trained token";
  for (const auto& e : s.skipped_examples) out += "\n  skipped: " + e;
  return out;
}

}  // namespace air::train
