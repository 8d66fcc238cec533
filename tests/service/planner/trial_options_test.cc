#include "planner/service/trial_options.h"

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

}  // namespace
}  // namespace tessera::service
