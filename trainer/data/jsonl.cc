// A .jsonl dataset: one Alpaca record per line; blank lines are skipped, errors give the line number.
#include <fstream>

#include "core/base/error.h"
#include "trainer/data/alpaca_record.h"

namespace air::train {

std::vector<AlpacaRecord> read_alpaca_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read dataset " + path);
  std::vector<AlpacaRecord> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) throw Error(path + ":" + std::to_string(n) + ": not valid JSON");
    out.push_back(alpaca_from_json(j, path + ":" + std::to_string(n)));
  }
  return out;
}

}  // namespace air::train
