// The version string of this build, shared by every binary.
#include "core/base/version.h"

namespace air {
const char* version() { return AIR_VERSION; }
}  // namespace air
