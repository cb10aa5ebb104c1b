// Edit distance between short words, for "did you mean" hints on unknown keys, fields and values.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace air {

// Levenshtein distance with transpositions counted as one edit (so "acelerator" vs "accelerator" is 1).
// Stops early and returns max_distance + 1 once the distance is known to exceed max_distance (0 = no cap).
int edit_distance(std::string_view a, std::string_view b, int max_distance = 0);

// The candidate closest to word, if it is close enough to be a plausible typo: at most a third of the
// word's length in edits (minimum 1, maximum 3), or equal ignoring case. Empty when none qualifies.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace air
