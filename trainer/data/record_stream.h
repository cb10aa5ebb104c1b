// Reading a dataset file's records in chunks, each handed on as soon as it is parsed, so the tokenization
// pass (trainer/data/dataset.h) holds one chunk of records, not the file: JSON Lines and a .json list 16,384
// records at a time (fewer past 8 MiB of text); Parquet one row group at a time. Kept apart from records.h,
// which the trainer's libtorch files include. No libtorch (air_data).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "trainer/data/records.h"

namespace air::train {

// Receives the next records in file order, and the fraction of the file read so far (for a progress line).
using RecordSink = std::function<void(std::vector<Record>&&, double done)>;

// read_records(), the records going to `sink` instead of the result (its `records` stay empty); counts,
// format and errors as read_records (every bad record, up to 20, in one air::Error at the end).
ReadResult read_records_chunked(const std::string& path, const ReadOptions& options, const RecordSink& sink);

}  // namespace air::train
