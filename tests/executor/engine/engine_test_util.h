// Runs the engine on the in-process world with CPU backends, for tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "executor/engine/param_export.h"
#include "executor/engine/rank_engine.h"
#include "gtest/gtest.h"

namespace tessera::executor::testing {

struct EngineRun {
  std::vector<double> losses;       // per step
  std::vector<double> grad_norms;   // per step, before clipping (when on)
  GlobalTensors weights;            // after the last step
  GlobalTensors gradients;          // of the last step, before the update
                                    // (meaningful for single-rank runs only)
  GlobalTensors step0_gradients;    // step 0's, summed over the ranks, before
                                    // clipping: the whole gradient
                                    // (Held::kReducedGradients)
  std::vector<int64_t> peak_bytes;  // per rank
};

// The seed of RunEngine's synthetic tokens (SyntheticTokens).
inline constexpr uint64_t kEngineDataSeed = 7;

struct RunOptions {
  std::string model = "tiny";
  int64_t seq_len = 32;
  int64_t global_batch = 8;
  int steps = 3;
  int64_t memory_limit_bytes = 0;
  bool keep_gradients = false;
  float lr = AdamWConfig{}.lr;  // 3e-4, a typical LLM peak rate
  double max_grad_norm = 0;     // 0: no clipping
};

// Runs `steps` optimizer steps of `layout_text` on `ranks` ranks.
absl::StatusOr<EngineRun> RunEngine(const std::string& layout_text, int ranks,
                                    const RunOptions& options = {});

// A layout on a number of ranks, the parameter of the layout tests.
struct LayoutCase {
  const char* layout;
  int ranks;
};
// Every supported combination on up to 8 ranks (tp, sp, pp with and without
// vpp, cp, ZeRO 0-3, HSDP, recomputation, micro-batching), which the CPU and
// CUDA layout tests run.
const std::vector<LayoutCase>& EquivalenceLayouts();
// Its test name: "tp_2_sp_1_micro_batch_2_r4".
std::string LayoutCaseName(const ::testing::TestParamInfo<LayoutCase>& info);

// |a - ref| / |ref| over the elements (L2).
double RelativeNormError(const std::vector<float>& a,
                         const std::vector<float>& ref);

// Step-0 gradients of two runs that sum in different orders: the measured
// worst (L2 per weight, relative) is 8.3e-7 over the 28 layouts against the
// single-rank run (cp=4's wk) and 7.7e-7 against PyTorch in float64; 1e-5
// leaves 12x for other machines' BLAS and still fails a 0.1% error in any
// one weight.
inline constexpr double kStep0GradientTolerance = 1e-5;

// Fails the test (naming `what`) unless `run` trained as `ref` did: losses
// per step within `loss_tolerance` relative (`tolerance` when negative),
// every weight present, written by some rank, its replicas bitwise equal
// and within `tolerance` relative (L2) of ref's.
void ExpectSameTraining(const EngineRun& run, const EngineRun& ref,
                        const std::string& what, double tolerance = 1e-5,
                        double loss_tolerance = -1);

// Fails the test unless `run`'s step-0 gradient (whole, summed over its
// ranks) of every weight is present, written everywhere, equal across
// replicas and within kStep0GradientTolerance of `ref`'s. Both runs must
// come from RunEngine (the CPU engine), which records them.
void ExpectSameStep0Gradients(const EngineRun& run, const EngineRun& ref,
                              const std::string& what);

// Fails the test unless `got` holds every weight of `want`, each element
// written by some rank, replicas equal, and within `tolerance` relative (L2).
void ExpectSameTensors(const GlobalTensors& got, const GlobalTensors& want,
                       const std::string& what, double tolerance);

}  // namespace tessera::executor::testing
