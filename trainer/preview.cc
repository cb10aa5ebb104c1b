// --preview-data: the same reading, rendering and masking as training (trainer/data/), printed.
#include "trainer/preview.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "trainer/data/dataset.h"
#include "trainer/sources.h"
#include "trainer/tokenizer/tokenizer.h"
#include "trainer/train_data.h"
#include "trainer/trainer.h"

namespace air::train {
namespace fs = std::filesystem;
namespace {

// The text of the ids, trained runs highlighted: each run of tokens with the same flag decoded together.
std::string highlighted(const Example& e, const Tokenizer& tok, bool color) {
  const char* on = color ? "\x1b[1;32m" : "{+";
  const char* off = color ? "\x1b[0m" : "+}";
  std::string out;
  size_t i = 0;
  while (i < e.ids.size()) {
    const bool t = e.trained(i);
    size_t j = i;
    while (j < e.ids.size() && e.trained(j) == t) ++j;
    std::string piece = tok.decode(std::vector<int32_t>(e.ids.begin() + static_cast<std::ptrdiff_t>(i), e.ids.begin() + static_cast<std::ptrdiff_t>(j)));
    out += t ? on + piece + off : piece;
    i = j;
  }
  return out;
}

}  // namespace

int preview_data(const TrainConfig& c, const PreviewOptions& o, std::ostream& out, std::ostream& log) {
  if (c.model_name.empty() && c.tokenizer_path.empty()) throw usage_error("--preview-data needs model_name (or tokenizer_path)");
  if (c.dataset_name.empty() && c.datasets.empty()) throw usage_error("--preview-data needs dataset_name (or datasets:)");
  const Source model = resolve_tokenizer_files(c.model_name, &log);
  const std::string tok_path = c.tokenizer_path.empty() ? (fs::path(model.path) / "tokenizer.json").string() : c.tokenizer_path;
  TextEncoder enc = load_text_encoder(tok_path, model.path, log);
  DataSettings settings = data_settings(c);
  std::optional<ChatTemplate> tmpl = load_chat_template(c, fs::path(tok_path).parent_path().string());
  if (tmpl) log << "chat template: " << tmpl->origin() << ", train_on " << c.train_on << "\n";
  ExampleBuilder builder(enc, tmpl ? &*tmpl : nullptr, settings.train_on);
  // A mixture: the first N records of each dataset, in the order of datasets:, each in its own format.
  std::vector<Record> records;
  const std::vector<DatasetSpec> sources = c.datasets.empty() ? std::vector<DatasetSpec>{{c.dataset_name, "", "train", 1}} : c.datasets;
  for (const DatasetSpec& d : sources) {
    DataSettings ds = settings;
    if (!d.format.empty()) ds.format = parse_format(d.format).value_or(DataFormat::kAuto);
    const Source data = resolve_dataset(d.name, d.split, &log);
    DataStats stats;
    for (Record& r : read_all_records(data.files, ds, stats, o.records, &log)) records.push_back(std::move(r));
  }
  int rc = 0;
  int64_t n = 0;
  for (const Record& r : records) {
    ++n;
    std::string text;
    Example e;
    std::string error;
    try {
      e = builder.build(r, &text);
    } catch (const RecordError& err) {
      error = err.what();
      rc = 1;
    }
    if (o.json) {
      nlohmann::json j;
      if (!error.empty()) {
        j = {{"error", error}};
      } else {
        std::vector<int64_t> labels(e.ids.size());
        for (size_t t = 0; t < e.ids.size(); ++t) labels[t] = e.trained(t) ? e.ids[t] : -100;
        j = {{"text", text}, {"input_ids", e.ids}, {"labels", labels}};
      }
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      continue;
    }
    out << "=== record " << n << " (" << r.where << ", " << format_name(r.format) << ")\n";
    if (!error.empty()) {
      out << "error: " << error << "\n\n";
      continue;
    }
    const int64_t len = std::min<int64_t>(static_cast<int64_t>(e.ids.size()), c.max_seq_len);
    out << highlighted(e, *enc.tokenizer, o.color) << "\n--- " << e.ids.size() << " tokens, " << e.targets_within(len)
        << " trained" << (static_cast<int64_t>(e.ids.size()) > c.max_seq_len ? " (truncated to max_seq_len " + std::to_string(c.max_seq_len) + ")" : "")
        << "\n\n";
  }
  return rc;
}

}  // namespace air::train
