// Edit distance and the "did you mean" choice.
#include <catch2/catch.hpp>

#include "core/base/edit_distance.h"

TEST_CASE("edit distance counts insertions, deletions, substitutions and transpositions") {
  CHECK(air::edit_distance("", "") == 0);
  CHECK(air::edit_distance("abc", "abc") == 0);
  CHECK(air::edit_distance("acelerator_type", "accelerator_type") == 1);
  CHECK(air::edit_distance("comptue", "compute") == 1);
  CHECK(air::edit_distance("kitten", "sitting") == 3);
  CHECK(air::edit_distance("abcdef", "uvwxyz", 2) == 3);
}

TEST_CASE("closest match prefers exact case-insensitive names and refuses far ones") {
  std::vector<std::string> keys = {"accelerator_type", "num_accelerators"};
  CHECK(air::closest_match("acelerator_type", keys) == "accelerator_type");
  CHECK(air::closest_match("ACCELERATOR_TYPE", keys) == "accelerator_type");
  CHECK(air::closest_match("num_accelerator", keys) == "num_accelerators");
  CHECK(air::closest_match("gpus", keys).empty());
  CHECK(air::closest_match("GPU_8xh100", {"GPU_8xH100", "GPU_8xH200"}) == "GPU_8xH100");
}
