// air-torchrun: torchrun-compatible launcher; all logic lives in air_launcher (launcher/torchrun*.cc).
#include "launcher/torchrun/torchrun.h"

int main(int argc, char** argv) { return air::launcher::torchrun_main(argc, argv); }
