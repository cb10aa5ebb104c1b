// Sharded, resumable checkpoints for FSDP: each rank writes its own slice of every unit (master weights
// and AdamW state) and its RNG state; rank 0 adds the loop's position. A retried attempt reads them back
// and continues the same loss curve. Layout (dir is on storage every node sees):
//   dir/step-00000050/rank-00003-of-00004.safetensors   unit.<name>.{master,exp_avg,exp_avg_sq}, rng.cpu
//   dir/step-00000050/state.json                         step, data position, world size, units
//   dir/latest                                           "step-00000050", written last
#pragma once
#include <cstdint>
#include <string>

namespace air::train {

class Fsdp;

// Where the training loop is; saved by rank 0, restored on every rank.
struct LoopState {
  int64_t step = 0;  // optimizer steps completed
  int64_t data_epoch = 0;
  int64_t data_cursor = 0;
  int64_t seed = 0;
};

// Collective: every rank calls it. Each file is written to a temporary name and renamed; `latest` moves
// only after every rank's file is in place, so a crash mid-save leaves the previous checkpoint current.
// Keeps the newest `keep` complete step folders, the new one included (0 keeps all); folders without
// state.json (a save that crashed) are removed.
void save_sharded_checkpoint(Fsdp& fsdp, const std::string& dir, const LoopState& loop, int keep = 2);

// Collective. Loads the checkpoint `latest` names into the shards (any world size: with a different world
// size every rank reads all shards and re-slices). Returns false when dir has no checkpoint; throws
// air::Error when it does not fit this model.
// `dir` is a checkpoint folder (with `latest`) or one step folder (with state.json). Every rank must see
// the same thing; when they do not (storage not shared between nodes), it throws air::Error.
bool load_sharded_checkpoint(Fsdp& fsdp, const std::string& dir, LoopState& loop);

// The step folder `dir` refers to: dir itself when it holds state.json, else the one `latest` names;
// "" when there is none. Local: reads only the file system.
std::string find_sharded_checkpoint(const std::string& dir);

}  // namespace air::train
