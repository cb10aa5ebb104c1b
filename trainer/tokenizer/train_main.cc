// air-tokenizer-train: trains the small byte-level BPE tokenizer of the examples (see bpe_train_tool.h).
#include <iostream>

#include "trainer/tokenizer/train_tool.h"

int main(int argc, char** argv) {
  return air::train::run_tokenizer_train(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
