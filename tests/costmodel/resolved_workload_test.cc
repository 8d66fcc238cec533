// A workload resolved once carries its training stack: what every
// prediction, search and fit of it reads, and the one check of a layout they
// share (costmodel/resolved_workload.h).
#include "costmodel/resolved_workload.h"

#include <string>
#include <vector>

#include "core/layout.h"
#include "costmodel/fit/calibration_fit.h"
#include "costmodel/prediction.h"
#include "costmodel/search/search.h"
#include "costmodel/stacks/stack_calibration.h"
#include "gtest/gtest.h"

namespace tessera::costmodel {
namespace {

Workload MakeWorkload(const char* model, const char* stack, int64_t nodes,
                      int64_t global_batch) {
  return Workload{*ModelPreset(model),
                  MakeCluster(*GpuPreset("h100-sxm"), nodes, 8),
                  TrainingConfig{.global_batch = global_batch,
                                 .seq_len = 4096,
                                 .stack = stack}};
}

Layout L(const char* text) {
  absl::StatusOr<Layout> l = ParseLayout(text);
  EXPECT_TRUE(l.ok()) << l.status();
  return *l;
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(ResolvedWorkloadTest, CarriesTheStackAsTheRunUsesIt) {
  Workload w = MakeWorkload("llama3-8b", "PyTorch-FSDP", 1, 16);
  w.training.stack_options = {"reduce-fp32"};
  absl::StatusOr<ResolvedWorkload> r = ResolveWorkload(w);
  ASSERT_TRUE(r.ok()) << r.status();
  // The stack's own name, in the workload and the stack it carries.
  EXPECT_EQ(r->workload.training.stack, "pytorch-fsdp");
  EXPECT_EQ(r->stack.name, "pytorch-fsdp");
  // Its options applied: fp32 gradient reduction (2 bytes without).
  EXPECT_EQ(r->stack.comm_bytes.gradient_reduce, 4);
  w.training.stack_options.clear();
  EXPECT_EQ(ResolveWorkload(w)->stack.comm_bytes.gradient_reduce, 2);
}

TEST(ResolvedWorkloadTest, RefusesByTheFieldThatIsWrong) {
  Workload w = MakeWorkload("llama3-8b", "jax", 1, 16);
  EXPECT_NE(Message(ResolveWorkload(w).status())
                .find("training.stack: unknown stack 'jax'"),
            std::string::npos);
  w.training.stack = "torchtitan";
  w.training.stack_options = {"turbo"};
  EXPECT_NE(Message(ResolveWorkload(w).status())
                .find("training.stack_options: the torchtitan stack has no "
                      "option 'turbo'"),
            std::string::npos);
  w.training.stack_options.clear();
  w.training.stack = "nanotron";
  w.training.precision = Precision::kFp8;
  EXPECT_NE(Message(ResolveWorkload(w).status())
                .find("training.precision: the nanotron stack does not "
                      "train in fp8"),
            std::string::npos);
  w.training.precision = Precision::kBf16;
  w.training.global_batch = 0;
  EXPECT_EQ(ResolveWorkload(w).status(), ValidateWorkload(w));
  EXPECT_FALSE(ResolveWorkload(w).ok());
}

// What predicts a resolved workload reads the stack it carries, not the
// registry: a stack changed in the resolved copy changes the verdicts.
TEST(ResolvedWorkloadTest, PredictionAndSearchReadTheCarriedStack) {
  const Workload w = MakeWorkload("llama3-8b", "megatron-core", 1, 16);
  const Calibration c = *DefaultCalibration(w);
  ResolvedWorkload r = *ResolveWorkload(w);
  const LayoutEvaluation by_name = PredictLayout(w, L("tp=2,zero=1"), c);
  const LayoutEvaluation resolved = PredictLayout(r, L("tp=2,zero=1"), c);
  ASSERT_TRUE(by_name.feasible) << by_name.reason;
  EXPECT_EQ(resolved.prediction.step_time_s, by_name.prediction.step_time_s);
  EXPECT_EQ(FormatLayout(resolved.layout), FormatLayout(by_name.layout));

  r.stack.layouts.tensor_parallel = false;
  const LayoutEvaluation refused = PredictLayout(r, L("tp=2,zero=1"), c);
  EXPECT_FALSE(refused.feasible);
  EXPECT_NE(refused.reason.find("layout.tp: the megatron-core stack has no "
                                "tensor parallelism"),
            std::string::npos)
      << refused.reason;
  // Resolved before the verdict, so that spellings of one layout compare.
  EXPECT_EQ(refused.layout.dp, 4);

  const SearchResult all = *SearchLayouts(w, c, SearchOptions{.top = 0});
  const SearchResult no_tp = *SearchLayouts(r, c, SearchOptions{.top = 0});
  EXPECT_LT(no_tp.searched, all.searched);
  bool any_tp = false;
  for (const LayoutEvaluation& e : all.candidates) any_tp |= e.layout.tp > 1;
  EXPECT_TRUE(any_tp);
  for (const LayoutEvaluation& e : no_tp.candidates) {
    EXPECT_EQ(e.layout.tp, 1) << FormatLayout(e.layout);
  }
}

// One check of a layout for the prediction and the fit: nanotron's
// cumulative-cost split runs more pipeline ranks than the model has layers
// (the ranks past the loss hold nothing), an even split does not. The fit
// refused such a trial while the prediction accepted it before they shared
// CheckResolvedLayout.
TEST(ResolvedWorkloadTest, PredictionAndFitShareOneLayoutCheck) {
  const Layout deep = *ResolveLayout(L("pp=8,micro_batch=1"), 8, 16);
  const Workload nanotron = MakeWorkload("tiny", "nanotron", 1, 16);
  ASSERT_LT(nanotron.model.layers, 8);
  EXPECT_TRUE(CheckResolvedLayout(*ResolveWorkload(nanotron), deep).ok());
  const Workload even = MakeWorkload("tiny", "megatron-core", 1, 16);
  EXPECT_NE(Message(CheckResolvedLayout(*ResolveWorkload(even), deep))
                .find("layout.pp"),
            std::string::npos);

  const Calibration prior = *DefaultCalibration(nanotron);
  const LayoutEvaluation e = PredictLayout(nanotron, deep, prior);
  ASSERT_TRUE(e.feasible) << e.reason;
  CalibrationSample s;
  s.workload = nanotron;
  s.layout = deep;
  s.step_time_s = e.prediction.step_time_s;
  const absl::StatusOr<CalibrationFit> fit = FitCalibration({s}, prior, {});
  EXPECT_TRUE(fit.ok()) << fit.status();
}

TEST(ResolvedWorkloadTest, OnNodesKeepsTheStackAndChecksTheCount) {
  ResolvedWorkload r =
      *ResolveWorkload(MakeWorkload("llama3-8b", "torchtitan", 4, 64));
  r.stack.layouts.tensor_parallel = false;  // to see that it is kept
  absl::StatusOr<ResolvedWorkload> two = OnNodes(r, 2);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->workload.cluster.world_size(), 16);
  EXPECT_FALSE(two->stack.layouts.tensor_parallel);
  EXPECT_FALSE(OnNodes(r, 0).ok());
}

}  // namespace
}  // namespace tessera::costmodel
