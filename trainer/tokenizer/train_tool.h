// air-tokenizer-train: trains a byte-level BPE tokenizer on local text and writes tokenizer.json (and
// tokenizer_config.json) atomically. The logic lives here so tests can run it in-process.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace air::train {

// Reads the training texts of one file: .json (an Alpaca array, or an array of strings), .jsonl (one
// Alpaca record, {"text": ...} or string per line) or anything else as plain text. Alpaca records are
// rendered in the prompt format the trainer uses. Throws std::runtime_error naming the file and the place.
std::vector<std::string> read_training_texts(const std::string& path);

// The Alpaca prompt format of the reference script, without the trailing EOS token.
std::string alpaca_text(const std::string& instruction, const std::string& input, const std::string& output);

// Runs the tool with argv-style arguments (without the program name); returns the exit code.
int run_tokenizer_train(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace air::train
