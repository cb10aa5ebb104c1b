// `air quotas set|list|rm` and `air usage`: quotas and who used the GPUs (docs/scheduler.md). Declared
// here, not in verbs.h, so that only the verb table includes them.
#pragma once

namespace CLI { class App; }

namespace air::cli {

struct Context;

void setup_quotas(CLI::App& app, Context& ctx);  // cli/sched/quotas.cc
void setup_usage(CLI::App& app, Context& ctx);   // cli/sched/usage.cc

}  // namespace air::cli
