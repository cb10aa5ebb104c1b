// air-train --preview-data N: the first N records (of each dataset of a mixture) exactly as they will be trained, from the tokenizer files
// alone (no weights, no GPU). On a terminal the rendered text with the trained tokens highlighted (plain
// {+ +} markers with NO_COLOR or when not a terminal); with -o json one object per record, in order:
// {"text", "input_ids", "labels"} (labels -100 where masked) or {"error": "..."} for a record that cannot
// be rendered.
#pragma once
#include <cstdint>
#include <ostream>

#include "trainer/config.h"

namespace air::train {

struct PreviewOptions {
  int64_t records = 5;
  bool json = false;
  bool color = false;  // ANSI colours (a terminal without NO_COLOR)
};

// Returns the exit code (0; 1 when a record could not be rendered). Configuration and data errors throw.
int preview_data(const TrainConfig& c, const PreviewOptions& o, std::ostream& out, std::ostream& log);

}  // namespace air::train
