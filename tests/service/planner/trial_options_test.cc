#include "service/trial_options.h"

#include "service/trial_command_check.h"

#include "gtest/gtest.h"

namespace tessera::service {
namespace {

ModelConfig Tiny() { return *ModelPreset("tiny"); }

TEST(TrialOptionsTest, DefaultsWhenAbsent) {
  absl::StatusOr<TrialOptions> o = ResolveTrialOptions({}, Tiny());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->max_trials, 8);
  EXPECT_EQ(o->first_rung, 4);
  EXPECT_EQ(o->eta, 2);
  EXPECT_EQ(o->warmup_steps, 2);
  EXPECT_EQ(o->steps, 3);
  EXPECT_EQ(o->backend, "");
  EXPECT_EQ(o->layers, 0);
  EXPECT_DOUBLE_EQ(o->trial_time_limit_s, 300);
  EXPECT_EQ(o->memory_limit_bytes, 0);
  EXPECT_EQ(o->seed, 1234u);
  EXPECT_DOUBLE_EQ(o->stop_margin, 0.1);
  EXPECT_DOUBLE_EQ(o->time_budget_s, 0);
}

TEST(TrialOptionsTest, FirstRungDefaultsToTheBudgetWhenSmaller) {
  v1::TrialOptions p;
  p.set_max_trials(3);
  EXPECT_EQ(ResolveTrialOptions(p, Tiny())->first_rung, 3);
  p.set_max_trials(0);
  absl::StatusOr<TrialOptions> none = ResolveTrialOptions(p, Tiny());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->max_trials, 0);
  EXPECT_EQ(none->first_rung, 0);
  // Explicit zeros that are values, not "absent".
  p.set_max_trials(5);
  p.set_warmup_steps(0);
  p.set_stop_margin(0);
  absl::StatusOr<TrialOptions> zeros = ResolveTrialOptions(p, Tiny());
  ASSERT_TRUE(zeros.ok());
  EXPECT_EQ(zeros->warmup_steps, 0);
  EXPECT_DOUBLE_EQ(zeros->stop_margin, 0);
}

TEST(TrialOptionsTest, StepsGrowByEtaPerRung) {
  TrialOptions o;
  o.steps = 3;
  o.eta = 3;
  EXPECT_EQ(o.StepsAtRung(0), 3);
  EXPECT_EQ(o.StepsAtRung(1), 9);
  EXPECT_EQ(o.StepsAtRung(2), 27);
  EXPECT_EQ(o.StepsAtRung(60), kMaxTrialSteps);
}

TEST(TrialOptionsTest, ErrorsNameTheField) {
  struct Case {
    std::function<void(v1::TrialOptions&)> edit;
    std::string prefix;
  };
  const Case cases[] = {
      {[](v1::TrialOptions& p) { p.set_max_trials(-1); },
       "study.trials.max_trials: "},
      {[](v1::TrialOptions& p) { p.set_time_budget_s(-1); },
       "study.trials.time_budget_s: "},
      {[](v1::TrialOptions& p) {
         p.set_max_trials(2);
         p.set_first_rung(3);
       },
       "study.trials.first_rung: "},
      {[](v1::TrialOptions& p) { p.set_eta(1); }, "study.trials.eta: "},
      {[](v1::TrialOptions& p) { p.set_steps(0); }, "study.trials.steps: "},
      {[](v1::TrialOptions& p) { p.set_warmup_steps(-2); },
       "study.trials.warmup_steps: "},
      {[](v1::TrialOptions& p) { p.set_backend("rocm"); },
       "study.trials.backend: "},
      {[](v1::TrialOptions& p) { p.set_layers(5); }, "study.trials.layers: "},
      {[](v1::TrialOptions& p) { p.set_trial_time_limit_s(0); },
       "study.trials.trial_time_limit_s: "},
      {[](v1::TrialOptions& p) { p.set_memory_limit_bytes(-1); },
       "study.trials.memory_limit_bytes: "},
      {[](v1::TrialOptions& p) { p.set_stop_margin(-0.5); },
       "study.trials.stop_margin: "},
  };
  for (const Case& c : cases) {
    v1::TrialOptions p;
    c.edit(p);
    absl::StatusOr<TrialOptions> o = ResolveTrialOptions(p, Tiny());
    ASSERT_FALSE(o.ok()) << c.prefix;
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(o.status().message().rfind(c.prefix, 0), 0u)
        << o.status().message();
  }
}

TEST(TrialOptionsTest, TheCommandBackendNeedsACheckedCommandAndOnlyIt) {
  v1::TrialOptions p;
  p.set_backend("command");
  EXPECT_EQ(ResolveTrialOptions(p, Tiny()).status().message(),
            "study.trials.command: required by backend 'command': the "
            "training command each agent runs");
  p.set_command("torchrun train.py --tp {tp} --mb {microbatch}");
  const absl::Status unknown = ResolveTrialOptions(p, Tiny()).status();
  EXPECT_EQ(unknown.message().rfind("study.trials.command: unknown "
                                    "placeholder {microbatch} at offset 33",
                                    0),
            0u)
      << unknown;
  p.set_command("torchrun train.py --tp {tp} --mb {micro_batch}");
  absl::StatusOr<TrialOptions> ok = ResolveTrialOptions(p, Tiny());
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->command, p.command());
  // A command with Tessera's own executor, or with no backend named.
  for (const char* backend : {"cpu", ""}) {
    p.set_backend(backend);
    const absl::Status s = ResolveTrialOptions(p, Tiny()).status();
    EXPECT_EQ(s.message().rfind("study.trials.command: only backend "
                                "\"command\" runs a command",
                                0),
              0u)
        << s;
  }
}

TEST(TrialOptionsTest, TheCommandMustPassEveryFieldItsStackVaries) {
  Workload w;
  w.training.stack = "pytorch-ddp";  // varies micro_batch, zero, recompute
  TrialOptions o;
  o.backend = "command";
  o.command = "train --mb {micro_batch} --zero {zero} --rc {recompute}";
  EXPECT_TRUE(CheckTrialBackendRunsStack(o, w).ok());
  o.command = "train --mb {micro_batch} --rc {recompute}";
  EXPECT_EQ(CheckTrialBackendRunsStack(o, w).message(),
            "study.trials.command: the pytorch-ddp stack varies zero between "
            "layouts, but the command has no {zero} (nor {config}): every "
            "trial would run the same zero");
  o.command = "train --config {config}";
  EXPECT_TRUE(CheckTrialBackendRunsStack(o, w).ok());
  // torchtitan also varies tp, pp, cp...
  w.training.stack = "torchtitan";
  o.command = "train --mb {micro_batch} --zero {zero} --rc {recompute}";
  EXPECT_NE(CheckTrialBackendRunsStack(o, w).message().find("varies tp"),
            std::string::npos);
  // Tessera's executor is not a framework a command runs.
  w.training.stack = "tessera";
  o.command = "train --config {config}";
  EXPECT_EQ(CheckTrialBackendRunsStack(o, w).message().rfind(
                "study.training.stack: 'tessera' is Tessera's own executor", 0),
            0u);
  // Tessera's executor runs any stack's layouts (its trials calibrate the
  // hardware).
  o.backend = "cpu";
  o.command.clear();
  w.training.stack = "torchtitan";
  EXPECT_TRUE(CheckTrialBackendRunsStack(o, w).ok());
}

}  // namespace
}  // namespace tessera::service
