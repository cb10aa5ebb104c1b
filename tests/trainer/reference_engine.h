// The autograd reference engine, for tests: run_training(config, log, make_reference_engine) trains with it.
#pragma once
#include <memory>

#include "trainer/parallel/engine.h"

namespace air::train::testing {

std::unique_ptr<Engine> make_reference_engine(const EngineSetup& s);

}  // namespace air::train::testing
