// The version of air this binary was built from.
#pragma once
namespace air {
const char* version();
}  // namespace air
