// A .json dataset: one list of Alpaca records (the layout of tatsu-lab's alpaca_data.json).
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "trainer/data/alpaca_record.h"

namespace air::train {

AlpacaRecord alpaca_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected an object with instruction, input and output");
  auto field = [&](const char* key, bool required) -> std::string {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (required) throw Error(where + ": missing '" + key + "'", "Alpaca records have instruction, input and output");
      return "";
    }
    if (!it->is_string()) throw Error(where + ": '" + key + "' must be a string, got " + it->dump());
    return it->get<std::string>();
  };
  return {field("instruction", true), field("input", false), field("output", true)};
}

std::vector<AlpacaRecord> read_alpaca_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read dataset " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw Error(path + ": not valid JSON", "a .json dataset is one list of records; use .jsonl for one per line");
  if (!j.is_array()) throw Error(path + ": expected a list of records");
  std::vector<AlpacaRecord> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(alpaca_from_json(j[i], path + ": record " + std::to_string(i)));
  return out;
}

}  // namespace air::train
