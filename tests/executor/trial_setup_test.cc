// What the CPU and CUDA trials share before their ranks start: the config's
// validation (each field's message), the result's identifying fields, the
// layout, tokens and engine config, the deadline, and the failed-result
// helpers. Expected values are written out by hand.
#include "executor/trial/trial_setup.h"

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "core/layout.h"
#include "core/model.h"
#include "executor/trial/trial_config.h"
#include "executor/trial/trial_records.h"
#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

TrialConfig Tiny(const char* layout, int64_t ranks) {
  TrialConfig c;
  c.model = *ModelPreset("tiny");
  c.layout = *ParseLayout(layout);
  c.ranks = ranks;
  c.global_batch = 8;
  c.seq_len = 32;
  c.warmup_steps = 1;
  c.steps = 3;
  return c;
}

std::string Invalid(const TrialConfig& c) {
  const absl::Status s = ValidateTrialConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(ValidateTrialConfigTest, NamesTheFieldThatIsWrong) {
  EXPECT_TRUE(ValidateTrialConfig(Tiny("tp=2", 4)).ok());

  TrialConfig c = Tiny("tp=2", 4);
  c.ranks = 0;
  EXPECT_EQ(Invalid(c), "trial.ranks: must be positive, got 0");
  c = Tiny("tp=2", 4);
  c.global_batch = -8;
  EXPECT_EQ(Invalid(c), "trial.global_batch: must be positive, got -8");
  c = Tiny("tp=2", 4);
  c.seq_len = 0;
  EXPECT_EQ(Invalid(c), "trial.seq_len: must be positive, got 0");
  c = Tiny("tp=2", 4);
  c.steps = 0;
  EXPECT_EQ(Invalid(c), "trial.steps: must be positive, got 0");

  const std::string negative =
      "trial: warmup, memory limit, time limit and ranks per host must not be "
      "negative";
  c = Tiny("tp=2", 4);
  c.warmup_steps = -1;
  EXPECT_EQ(Invalid(c), negative);
  c = Tiny("tp=2", 4);
  c.memory_limit_bytes = -1;
  EXPECT_EQ(Invalid(c), negative);
  c = Tiny("tp=2", 4);
  c.time_limit_s = -0.5;
  EXPECT_EQ(Invalid(c), negative);
  c = Tiny("tp=2", 4);
  c.ranks_per_host = -2;
  EXPECT_EQ(Invalid(c), negative);

  c = Tiny("tp=2", 4);
  c.process_rank = 4;
  c.rendezvous_file = "/tmp/r";
  EXPECT_EQ(Invalid(c), "trial.rank: 4 is not below the 4 ranks");
  c.process_rank = 3;
  EXPECT_TRUE(ValidateTrialConfig(c).ok());
  c.rendezvous_file.clear();
  EXPECT_EQ(Invalid(c),
            "trial.rendezvous_file: required with one process per rank");

  // The model last, with ValidateModel's own message.
  c = Tiny("tp=2", 4);
  c.model.kv_heads = 3;
  const absl::Status model = ValidateModel(c.model);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(Invalid(c), model.message());
  c.steps = 0;  // the counts come first
  EXPECT_EQ(Invalid(c), "trial.steps: must be positive, got 0");
}

TEST(NewTrialResultTest, NamesTheTrialAndMeasuresNothing) {
  TrialConfig c = Tiny("tp=2,pp=2", 8);
  c.backend = "cuda";
  TrialResult r = NewTrialResult(c);
  EXPECT_EQ(r.backend, "cuda");
  EXPECT_EQ(r.model, "tiny");
  EXPECT_EQ(r.layout.tp, 2);
  EXPECT_EQ(r.layout.pp, 2);
  EXPECT_EQ(r.layout.dp, 0);  // as given: not resolved yet
  EXPECT_EQ(r.ranks, 8);
  EXPECT_EQ(r.global_batch, 8);
  EXPECT_EQ(r.seq_len, 32);
  EXPECT_EQ(r.warmup_steps, 1);
  EXPECT_EQ(r.steps, 0);
  EXPECT_TRUE(r.loss.empty());
  c.model.name.clear();
  EXPECT_EQ(NewTrialResult(c).model, "custom");
}

TEST(SetUpTrialTest, ResolvesTheLayoutAndBuildsTheEngineConfig) {
  const TrialConfig c = Tiny("tp=2,micro_batch=1", 4);
  TrialResult r = NewTrialResult(c);
  absl::StatusOr<TrialSetup> setup = SetUpTrial(c, r);
  ASSERT_TRUE(setup.ok()) << setup.status();
  // 4 ranks / tp 2 = dp 2; 8 sequences / (dp 2 x micro-batch 1) = 4.
  EXPECT_EQ(r.layout.dp, 2);
  EXPECT_EQ(r.layout.grad_accum, 4);
  EXPECT_EQ(setup->engine.layout.dp, 2);
  EXPECT_EQ(setup->engine.layout.grad_accum, 4);
  EXPECT_EQ(setup->engine.model.name, "tiny");
  EXPECT_EQ(setup->engine.seq_len, 32);
  EXPECT_EQ(setup->engine.global_batch, 8);
  EXPECT_EQ(setup->engine.seed, c.seed);
  ASSERT_NE(setup->data, nullptr);
  EXPECT_EQ(setup->engine.data, setup->data.get());
  // Moving the setup keeps the engine's pointer to its tokens valid.
  const TokenSource* tokens = setup->data.get();
  const TrialSetup moved = std::move(*setup);
  EXPECT_EQ(moved.engine.data, tokens);
  EXPECT_TRUE(CheckEngineConfig(moved.engine, 4).ok());
}

TEST(SetUpTrialTest, FailuresKeepWhatResolved) {
  // A layout the ranks cannot hold: the result keeps the layout as given.
  TrialConfig c = Tiny("tp=3", 4);
  TrialResult r = NewTrialResult(c);
  absl::StatusOr<TrialSetup> setup = SetUpTrial(c, r);
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.status().message(),
            ResolveLayout(c.layout, 4, 8).status().message());
  EXPECT_EQ(r.layout.dp, 0);

  // A data file that does not open: the layout had resolved already.
  c = Tiny("tp=2", 4);
  c.data_path = "/nonexistent/tessera/tokens.bin";
  r = NewTrialResult(c);
  setup = SetUpTrial(c, r);
  ASSERT_FALSE(setup.ok());
  EXPECT_NE(setup.status().message().find("tokens.bin"), std::string::npos)
      << setup.status();
  EXPECT_EQ(r.layout.dp, 2);

  // A model the executor does not train: the engine config's check.
  c = Tiny("tp=2", 4);
  c.model.mlp = MlpKind::kGelu;
  r = NewTrialResult(c);
  setup = SetUpTrial(c, r);
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.status().message(),
            "model.mlp: the executor trains Llama models (swiglu), not gelu");
  EXPECT_EQ(r.layout.dp, 2);
}

TEST(TrialDeadlineTest, TheTimeLimitFromNowOrNone) {
  using Clock = std::chrono::steady_clock;
  TrialConfig c = Tiny("tp=1", 1);
  EXPECT_EQ(TrialDeadline(c), Clock::time_point::max());  // 0: no limit
  c.time_limit_s = 100;
  const Clock::time_point before = Clock::now();
  const Clock::time_point deadline = TrialDeadline(c);
  const Clock::time_point after = Clock::now();
  EXPECT_GE(deadline, before + std::chrono::seconds(100));
  EXPECT_LE(deadline, after + std::chrono::seconds(100));
}

TEST(FailedResultTest, SetsStatusAndReasonAndKeepsTheRest) {
  TrialResult r = NewTrialResult(Tiny("tp=2", 4));
  r.steps = 7;
  const TrialResult failed =
      FailedResult(r, TrialStatus::kInvalid, "layout.tp: 3 does not divide 4");
  EXPECT_EQ(failed.status, TrialStatus::kInvalid);
  EXPECT_EQ(failed.reason, "layout.tp: 3 does not divide 4");
  EXPECT_EQ(failed.steps, 7);
  EXPECT_EQ(failed.model, "tiny");
  // From a status: its trial status (TrialStatusFor) and its message.
  const TrialResult oom = FailedResult(
      r, absl::ResourceExhaustedError("cpu backend: allocating x ..."));
  EXPECT_EQ(oom.status, TrialStatus::kOom);
  EXPECT_EQ(oom.reason, "cpu backend: allocating x ...");
  EXPECT_EQ(FailedResult(r, absl::DataLossError("loss is nan")).status,
            TrialStatus::kNan);
  EXPECT_EQ(FailedResult(r, absl::InternalError("boom")).status,
            TrialStatus::kCrash);
}

}  // namespace
}  // namespace tessera::executor
