// Alpaca instruction records (instruction / input / output) from the formats hub datasets come in: a JSON
// list, JSON Lines, or Parquet. Needs no libtorch (library air_data). Errors name the file and the record.
#pragma once
#include <string>
#include <vector>

namespace air::train {

struct AlpacaRecord {
  std::string instruction, input, output;
};

// By extension: .json, .jsonl, .parquet.
std::vector<AlpacaRecord> read_alpaca(const std::string& path);

std::vector<AlpacaRecord> read_alpaca_json(const std::string& path);
std::vector<AlpacaRecord> read_alpaca_jsonl(const std::string& path);
std::vector<AlpacaRecord> read_alpaca_parquet(const std::string& path);

}  // namespace air::train
