// The `air` executable: main() only forwards to the CLI library so every command is testable in-process.
#include "cli/app.h"

int main(int argc, char** argv) { return air::cli::main(argc, argv); }
