// Reassembles whole (global) weights and gradients from the pieces every rank
// holds, whatever the layout: each rank writes the elements of its master
// shard at their global coordinates. Used to compare layouts with the
// single-rank run, to check that replicas agree, and to hand weights to an
// independent implementation.
//
//   GlobalTensors weights;  // shared by the rank threads
//   absl::Mutex mu;
//   // on each rank: ExportHeld(*engine, backend, Held::kWeights, &weights,
//   &mu);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "executor/backend.h"
#include "executor/engine/rank_engine.h"

namespace tessera::executor {

struct GlobalTensor {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<float> values;  // row-major [rows x cols]
  std::vector<int> writers;   // per element: how many ranks wrote it
  // Elements written twice with different values (replicas that disagree).
  int64_t conflicts = 0;
};
using GlobalTensors = std::map<std::string, GlobalTensor>;

enum class Held {
  kWeights,    // the fp32 master weights
  kGradients,  // ParamStore::grad_shard: the local, not yet reduced gradient
  // ParamStore::reduced_grad_shard: the whole gradient, summed over the ranks
  // (after RankEngine::ReduceGradients, before ApplyOptimizer).
  kReducedGradients,
};

// Writes what this rank holds into *out (guarded by *mu), creating tensors on
// first use. Counts writers and conflicting values.
void ExportHeld(const RankEngine& engine, Backend& backend, Held what,
                GlobalTensors* out, absl::Mutex* mu);

}  // namespace tessera::executor
