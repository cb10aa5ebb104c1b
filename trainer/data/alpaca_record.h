// Shared by the JSON and JSON Lines readers: one JSON object to an Alpaca record, or an error at `where`.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "trainer/data/alpaca.h"

namespace air::train {

AlpacaRecord alpaca_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace air::train
