// Syntax check of pip requirement strings (environment.dependencies): PEP 508 names, extras, version
// specifiers, environment markers and `name @ url`, plus a few pip options (-r FILE, -c FILE, -e PATH,
// --index-url URL, --extra-index-url URL, --find-links URL, --pre) and plain paths or URLs to archives.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace air {

struct RequirementProblem {
  std::string message;  // "expected a version after '>='"
  std::string hint;     // "use '==' to pin a version"
  size_t offset = 0;    // byte offset of the problem within the requirement
  size_t length = 1;
};

// nullopt when the requirement is well-formed.
std::optional<RequirementProblem> check_requirement(std::string_view req);

}  // namespace air
