// "Did you mean" for the trainer's settings (config keys, LoRA's target modules): one rule for both.
#pragma once
#include <string>
#include <vector>

namespace air::train {

// The choice closest to word by edit distance when it is a plausible typo (at most max(2, |word| / 3)
// edits), else "".
std::string closest_choice(const std::string& word, const std::vector<std::string>& choices);

}  // namespace air::train
