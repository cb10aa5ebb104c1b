// air-train: supervised fine-tuning of Llama-family models in libtorch (see docs/trainer.md).
#include "trainer/trainer.h"

int main(int argc, char** argv) { return air::train::train_main(argc, argv); }
