// A study end to end over real gRPC with one scripted agent: rung 0 is the
// best predicted layouts, reports refit the calibration, the best half runs
// again eta times longer, the study ends with a labelled recommendation.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "gtest/gtest.h"
#include "service/trial_geometry.h"
#include "proto/convert.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

std::string Key(const v1::Layout& l) { return LayoutKey(*LayoutFromProto(l)); }

int64_t Submit(TestServer& s, const v1::StudySpec& spec) {
  v1::SubmitStudyRequest r;
  *r.mutable_spec() = spec;
  v1::SubmitStudyResponse out;
  const grpc::Status st = s.planner->SubmitStudy(Context().get(), r, &out);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return out.study_id();
}

v1::Recommendation Recommendation(TestServer& s, int64_t id) {
  v1::GetRecommendationRequest r;
  r.set_study_id(id);
  v1::Recommendation out;
  const grpc::Status st =
      s.planner->GetRecommendation(Context().get(), r, &out);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return out;
}

v1::PlanResponse Plan(TestServer& s, const v1::StudySpec& spec) {
  v1::PlanRequest r;
  *r.mutable_study() = spec;
  v1::PlanResponse out;
  const grpc::Status st = s.planner->Plan(Context().get(), r, &out);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return out;
}

TEST(StudyFlowTest, TrialsRefitDecideOneByOneAndEndWithAMeasuredBest) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  ScriptedAgent agent(s, "cpu-a");
  ASSERT_TRUE(agent.Register().ok());

  v1::StudySpec spec = TinySpec(1, 2);
  spec.mutable_trials()->set_max_trials(6);
  spec.mutable_trials()->set_first_rung(4);
  spec.mutable_trials()->set_stop_margin(10);  // never ahead by that much
  // As many candidates as the study's pool keeps (4 x max_trials).
  spec.mutable_search()->set_top(24);
  // The ranking before any trial: the defaults (nothing calibrated yet).
  const v1::PlanResponse plan = Plan(s, spec);
  ASSERT_GE(plan.candidates_size(), 4);
  std::map<std::string, double> default_step_s;
  v1::StudySpec all = spec;
  all.mutable_search()->set_top(1000);
  const v1::PlanResponse every = Plan(s, all);
  for (const v1::LayoutEvaluation& e : every.candidates()) {
    default_step_s[Key(e.layout())] = e.prediction().step_time_s();
  }
  const int64_t id = Submit(s, spec);

  // One agent runs one trial at a time, so one is queued at a time: the
  // best predicted first, 2 steps at rung 0.
  std::vector<v1::Trial> trials = ListTrials(s, id);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].state(), v1::TRIAL_QUEUED);
  EXPECT_EQ(trials[0].rung(), 0);
  EXPECT_EQ(trials[0].steps(), 2);
  EXPECT_EQ(trials[0].warmup_steps(), 1);
  EXPECT_EQ(trials[0].gang_size(), 1);
  EXPECT_EQ(Key(trials[0].layout()), Key(plan.candidates(0).layout()));
  EXPECT_DOUBLE_EQ(trials[0].predicted().tokens_per_s(),
                   plan.candidates(0).prediction().tokens_per_s());
  EXPECT_EQ(GetStudy(s, id).study().state(), v1::STUDY_RUNNING);

  // The agent runs what it is given: the i-th new layout at speed[i] times
  // the model's best prediction, so that the second and third are within
  // the noise of each other; a repeat 1% faster than its first run.
  const double speed[] = {0.85, 1.0, 0.99, 0.9, 0.8, 0.8};
  const double best_default_step_s =
      plan.candidates(0).prediction().step_time_s();
  std::map<std::string, double> slower_of_layout;
  std::map<std::string, double> first_step_s;
  std::map<std::string, std::vector<std::pair<double, int64_t>>> runs;
  std::set<std::string> rung0;
  int64_t reported = 0;
  for (int i = 0; i < 10; ++i) {
    std::optional<v1::TrialAssignment> a = agent.Lease();
    if (!a.has_value()) break;
    EXPECT_EQ(a->world_size(), 2);
    EXPECT_EQ(a->ranks_per_node(), 2);
    EXPECT_EQ(a->gang_size(), 1);
    EXPECT_EQ(a->global_batch(), 8);
    EXPECT_EQ(a->seq_len(), 128);
    EXPECT_EQ(a->backend(), "cpu");
    EXPECT_EQ(a->model().preset(), "tiny");
    EXPECT_EQ(a->seed(), 1234u);
    EXPECT_DOUBLE_EQ(a->time_limit_s(), 300);
    const std::string key = Key(a->layout());
    double step_s = 0;
    if (!first_step_s.count(key)) {
      ASSERT_GT(default_step_s[key], 0) << key;
      step_s = best_default_step_s / speed[rung0.size()];
      first_step_s[key] = step_s;
      EXPECT_EQ(a->steps(), 2) << "a new layout runs at rung 0";
      rung0.insert(key);
    } else {
      step_s = first_step_s[key] / 1.01;
      EXPECT_EQ(a->steps(), 4) << "a repeat runs eta times longer";
    }
    runs[key].push_back({8 * 128 / step_s, a->steps()});
    ASSERT_TRUE(agent.Report(a->trial_id(), OkResultJson(*a, step_s)).ok());
    ++reported;
    if (reported == 1) {
      // The first result recalibrates the study, but one trial does not
      // change what every study on the GPU starts from.
      absl::StatusOr<db::Calibration> mine =
          s.server->store().LatestCalibration(db::StudyScope(id));
      ASSERT_TRUE(mine.ok()) << mine.status();
      EXPECT_EQ(mine->samples, 1);
      EXPECT_EQ(mine->trial_ids, std::vector<int64_t>{a->trial_id()});
      EXPECT_EQ(s.server->store()
                    .LatestCalibration(db::GpuScope("h100-sxm"))
                    .status()
                    .code(),
                absl::StatusCode::kNotFound);
      // The next trial was queued after this result, by it.
      const std::vector<v1::Trial> now = ListTrials(s, id);
      ASSERT_EQ(now.size(), 2u);
      EXPECT_EQ(now[1].state(), v1::TRIAL_QUEUED);
    }
    if (reported == 3) {
      // Three trials one set of coefficients explains: the GPU's too.
      absl::StatusOr<db::Calibration> c =
          s.server->store().LatestCalibration(db::GpuScope("h100-sxm"));
      ASSERT_TRUE(c.ok()) << c.status();
      EXPECT_EQ(c->samples, 3);
      EXPECT_TRUE(c->excluded_trial_ids.empty());
    }
  }
  // Four layouts explored (first_rung), then the close ones confirmed.
  EXPECT_EQ(rung0.size(), 4u);
  EXPECT_EQ(reported, 6);
  trials = ListTrials(s, id);
  ASSERT_EQ(trials.size(), 6u);
  int64_t repeats = 0;
  for (const v1::Trial& t : trials) {
    EXPECT_EQ(t.state(), v1::TRIAL_OK);
    EXPECT_GT(t.measured().tokens_per_s(), 0);
    if (t.rung() == 1) ++repeats;
  }
  EXPECT_EQ(repeats, 2);
  const v1::GetStudyResponse done = GetStudy(s, id);
  EXPECT_EQ(done.study().state(), v1::STUDY_DONE);
  EXPECT_NE(done.study().state_reason().find("the trial budget of 6 is spent"),
            std::string::npos)
      << done.study().state_reason();
  EXPECT_NE(done.study().state_reason().find("leads"), std::string::npos)
      << done.study().state_reason();
  EXPECT_EQ(done.study().trials_done(), 6);

  // The best: every run of a layout together (steps-weighted geometric
  // mean), computed here from what the agent reported.
  std::string best_key;
  double best_tokens_per_s = 0;
  for (const auto& [key, list] : runs) {
    double log_sum = 0, steps = 0;
    for (const auto& [tokens, n] : list) {
      log_sum += static_cast<double>(n) * std::log(tokens);
      steps += static_cast<double>(n);
    }
    const double combined = std::exp(log_sum / steps);
    if (combined > best_tokens_per_s) {
      best_tokens_per_s = combined;
      best_key = key;
    }
  }
  EXPECT_NEAR(done.study().best_tokens_per_s(), best_tokens_per_s,
              1e-9 * best_tokens_per_s);
  const v1::Recommendation r = Recommendation(s, id);
  EXPECT_TRUE(r.final());
  EXPECT_EQ(Key(done.study().best_layout()), best_key);
  EXPECT_EQ(Key(r.best_throughput().layout()), best_key);
  EXPECT_EQ(r.best_throughput().provenance(), v1::MEASURED);
  EXPECT_NEAR(r.best_throughput().tokens_per_s(), best_tokens_per_s,
              1e-9 * best_tokens_per_s);
  // How sure: the lead over the runner-up, with the noise of the trials.
  EXPECT_GT(r.lead_log(), 0);
  EXPECT_GT(r.lead_log_sd(), 0);
  EXPECT_GT(r.noise_log_sd(), 0);
  EXPECT_FALSE(r.noise_source().empty());
  EXPECT_NE(r.best_throughput().why().find("leads the next measured layout"),
            std::string::npos)
      << r.best_throughput().why();
  // CPU trials never measure power: energy is the model's.
  EXPECT_EQ(r.best_throughput().energy_provenance(), v1::PREDICTED);
  // Full run of 1e9 tokens at the measured rate.
  EXPECT_NEAR(r.best_throughput().full_run().days(),
              1e9 / best_tokens_per_s / 86400, 1e-9);
  EXPECT_NEAR(r.best_throughput().full_run().gpu_hours(),
              2 * 1e9 / best_tokens_per_s / 3600, 1e-6);
  // Every layout on the front is labelled: measured ones name their trial.
  ASSERT_GE(r.pareto_size(), 1);
  for (const v1::RecommendedLayout& p : r.pareto()) {
    ASSERT_NE(p.provenance(), v1::PROVENANCE_UNSPECIFIED);
    EXPECT_EQ(p.provenance() == v1::MEASURED, p.trial_id() > 0);
    EXPECT_EQ(p.energy_provenance(), v1::PREDICTED);
  }
  EXPECT_EQ(r.calibration_samples(), 6);
  EXPECT_GT(r.calibration().size(), 10u);
  EXPECT_EQ(r.history_db(), dir.File("t.db"));
  EXPECT_EQ(r.gpu_name(), "h100-sxm");
  EXPECT_NE(r.best_throughput().why().find("measured by"), std::string::npos)
      << r.best_throughput().why();
}

// search.candidates: "only these layouts run in my framework". Plan ranks
// just them, and a study trials and recommends only among them.
TEST(StudyFlowTest, ACandidatesListRestrictsTheStudy) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  ScriptedAgent agent(s, "cpu-a");
  ASSERT_TRUE(agent.Register().ok());
  v1::StudySpec spec = TinySpec(1, 2);
  spec.mutable_search()->set_top(100);
  const v1::PlanResponse all = Plan(s, spec);
  ASSERT_GE(all.candidates_size(), 8);
  // Three layouts well below the model's best.
  std::set<std::string> allowed;
  for (int rank : {7, 5, 3}) {
    *spec.mutable_search()->add_candidates() = all.candidates(rank).layout();
    allowed.insert(Key(all.candidates(rank).layout()));
  }
  const v1::PlanResponse plan = Plan(s, spec);
  ASSERT_EQ(plan.candidates_size(), 3);
  EXPECT_EQ(Key(plan.candidates(0).layout()), Key(all.candidates(3).layout()));
  spec.mutable_trials()->set_max_trials(6);
  const int64_t id = Submit(s, spec);
  for (int i = 0; i < 10; ++i) {
    std::optional<v1::TrialAssignment> a = agent.Lease();
    if (!a.has_value()) break;
    EXPECT_TRUE(allowed.count(Key(a->layout()))) << Key(a->layout());
    ASSERT_TRUE(agent.Report(a->trial_id(), OkResultJson(*a, 0.1)).ok());
  }
  EXPECT_EQ(GetStudy(s, id).study().state(), v1::STUDY_DONE);
  const v1::Recommendation r = Recommendation(s, id);
  EXPECT_TRUE(allowed.count(Key(r.best_throughput().layout())));
  for (const v1::Trial& t : ListTrials(s, id)) {
    EXPECT_TRUE(allowed.count(Key(t.layout()))) << Key(t.layout());
  }
  // A candidate that is no layout is refused, naming it.
  spec.mutable_search()->mutable_candidates(1)->set_tp(-2);
  v1::SubmitStudyRequest bad;
  *bad.mutable_spec() = spec;
  v1::SubmitStudyResponse out;
  const grpc::Status st = s.planner->SubmitStudy(Context().get(), bad, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("search.candidates[1]: layout.tp"),
            std::string::npos)
      << st.error_message();
}

TEST(StudyFlowTest, NoTrialBudgetEndsAtOnceWithThePrediction) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  v1::StudySpec spec = TinySpec(1, 2);
  spec.mutable_trials()->set_max_trials(0);
  const v1::PlanResponse plan = Plan(s, spec);
  const int64_t id = Submit(s, spec);
  const v1::GetStudyResponse st = GetStudy(s, id);
  EXPECT_EQ(st.study().state(), v1::STUDY_DONE);
  EXPECT_EQ(st.study().trials_total(), 0);
  EXPECT_TRUE(ListTrials(s, id).empty());
  const v1::Recommendation r = Recommendation(s, id);
  EXPECT_TRUE(r.final());
  EXPECT_EQ(r.best_throughput().provenance(), v1::PREDICTED);
  EXPECT_EQ(r.best_throughput().energy_provenance(), v1::PREDICTED);
  EXPECT_DOUBLE_EQ(r.best_throughput().tokens_per_s(),
                   plan.best_throughput().prediction().tokens_per_s());
  EXPECT_DOUBLE_EQ(r.best_energy().tokens_per_joule(),
                   plan.best_energy().prediction().tokens_per_joule());
  EXPECT_EQ(r.calibration_samples(), 0);
}

TEST(StudyFlowTest, ListsStudiesAndHistoryAcrossStudies) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  ScriptedAgent agent(s, "cpu-a");
  ASSERT_TRUE(agent.Register().ok());
  v1::StudySpec spec = TinySpec(1, 2);
  spec.mutable_trials()->set_max_trials(1);
  const int64_t first = Submit(s, spec);
  std::optional<v1::TrialAssignment> a = agent.Lease();
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(agent.Report(a->trial_id(), OkResultJson(*a, 0.25)).ok());
  EXPECT_EQ(GetStudy(s, first).study().state(), v1::STUDY_DONE);
  const int64_t second = Submit(s, spec);
  a = agent.Lease();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->study_id(), second);
  ASSERT_TRUE(agent.Report(a->trial_id(), OkResultJson(*a, 0.5)).ok());

  // History: study 0 lists both studies' trials, filtered by layout field
  // and sorted by measured tokens/s.
  v1::ListTrialsRequest r;
  r.set_sort("-tokens_per_s");
  r.add_states(v1::TRIAL_OK);
  r.set_tp(a->layout().tp());
  v1::ListTrialsResponse out;
  ASSERT_TRUE(s.planner->ListTrials(Context().get(), r, &out).ok());
  ASSERT_EQ(out.trials_size(), 2);
  EXPECT_EQ(out.trials(0).study_id(), first);
  EXPECT_GT(out.trials(0).measured().tokens_per_s(),
            out.trials(1).measured().tokens_per_s());
  EXPECT_EQ(out.trials(0).gpu(), "h100-sxm");
  EXPECT_EQ(out.trials(0).model(), "tiny");
  // A bad sort key names the field.
  r.set_sort("speed");
  const grpc::Status bad = s.planner->ListTrials(Context().get(), r, &out);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(bad.error_message().rfind("sort: ", 0), 0u) << bad.error_message();

  v1::ListStudiesRequest ls;
  ls.set_state(v1::STUDY_DONE);
  v1::ListStudiesResponse studies;
  ASSERT_TRUE(s.planner->ListStudies(Context().get(), ls, &studies).ok());
  ASSERT_EQ(studies.studies_size(), 2);
  EXPECT_EQ(studies.studies(0).id(), second);  // newest first
  EXPECT_EQ(studies.studies(1).trials_done(), 1);
}

TEST(StudyFlowTest, TheTimeBudgetEndsTheStudyWithWhatWasMeasured) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  ScriptedAgent agent(s, "cpu-a");
  ASSERT_TRUE(agent.Register().ok());
  v1::StudySpec spec = TinySpec(1, 2);
  spec.mutable_trials()->set_time_budget_s(60);
  spec.mutable_trials()->set_stop_margin(10);
  const int64_t id = Submit(s, spec);
  std::optional<v1::TrialAssignment> a = agent.Lease();
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(agent.Report(a->trial_id(), OkResultJson(*a, 0.01)).ok());
  std::optional<v1::TrialAssignment> b = agent.Lease();
  ASSERT_TRUE(b.has_value());
  clock.Advance(absl::Seconds(59));
  ASSERT_TRUE(agent.Heartbeat({b->trial_id()}).ok());
  s.Reap();
  EXPECT_EQ(GetStudy(s, id).study().state(), v1::STUDY_RUNNING);
  clock.Advance(absl::Seconds(2));
  s.Reap();
  const v1::GetStudyResponse st = GetStudy(s, id);
  EXPECT_EQ(st.study().state(), v1::STUDY_DONE);
  EXPECT_EQ(st.study().state_reason(), "the time budget of 60 s is spent");
  // One agent runs one trial at a time: the second is the study's last,
  // and the running one is told to stop.
  const std::vector<v1::Trial> trials = ListTrials(s, id);
  EXPECT_EQ(trials.size(), 2u);
  for (const v1::Trial& t : trials) {
    if (t.id() == a->trial_id()) {
      EXPECT_EQ(t.state(), v1::TRIAL_OK);
    } else if (t.id() == b->trial_id()) {
      EXPECT_EQ(t.state(), v1::TRIAL_LEASED);
    } else {
      EXPECT_EQ(t.state(), v1::TRIAL_CANCELLED) << t.id();
    }
  }
  v1::HeartbeatResponse hb;
  ASSERT_TRUE(agent.Heartbeat({b->trial_id()}, &hb).ok());
  ASSERT_EQ(hb.cancel_trials_size(), 1);
  EXPECT_EQ(hb.cancel_trials(0), b->trial_id());
  EXPECT_FALSE(agent.Lease().has_value());
  const v1::Recommendation r = Recommendation(s, id);
  EXPECT_TRUE(r.final());
  EXPECT_EQ(r.best_throughput().provenance(), v1::MEASURED);
  EXPECT_EQ(r.best_throughput().trial_id(), a->trial_id());
}

TEST(StudyFlowTest, FewerAgentsThanNodesScaleTheTrialsDown) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  ScriptedAgent agent(s, "cpu-a", "cpu", 1);
  ASSERT_TRUE(agent.Register().ok());
  v1::StudySpec spec = TinySpec(2, 1);  // 2 nodes, 1 agent
  spec.mutable_trials()->set_max_trials(1);
  // Data parallelism only (FSDP1): on this toy the cost model ranks a
  // two-stage pipeline first (its collectives are all latency), and a
  // candidate pool without a layout that fits one rank has nothing to scale
  // down.
  spec.mutable_training()->set_stack("pytorch-fsdp");
  const int64_t id = Submit(s, spec);
  const std::vector<v1::Trial> trials = ListTrials(s, id);
  ASSERT_EQ(trials.size(), 1u);
  const v1::Trial& t = trials[0];
  EXPECT_EQ(t.gang_size(), 1);
  // Only layouts without model parallelism fit one rank: dp 1 of 2.
  EXPECT_EQ(t.layout().tp() * t.layout().pp() * t.layout().cp(), 1);
  EXPECT_EQ(t.layout().dp(), 1);
  EXPECT_EQ(t.reason(), "measured at dp 1 of 2");
  std::optional<v1::TrialAssignment> a = agent.Lease();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->world_size(), 1);
  EXPECT_EQ(a->ranks_per_node(), 1);
  // The global batch shrinks with dp: micro_batch * 1 * grad_accum.
  EXPECT_EQ(a->global_batch(),
            a->layout().micro_batch() * a->layout().grad_accum());
  EXPECT_EQ(a->global_batch(), 4);
  EXPECT_FALSE(ListTrials(s, id)[0].has_ran()) << "not measured yet";
  ASSERT_TRUE(agent.Report(a->trial_id(), OkResultJson(*a, 0.01)).ok());
  // What it ran, for `tessera calibrate`: the study at the trial's scale on
  // Tessera's executor.
  const v1::Trial listed = ListTrials(s, id)[0];
  ASSERT_TRUE(listed.has_ran());
  EXPECT_EQ(listed.ran().cluster().nodes(), 1);
  EXPECT_EQ(listed.ran().cluster().gpus_per_node(), 1);
  EXPECT_EQ(listed.ran().training().global_batch(), 4);
  EXPECT_EQ(listed.ran().training().stack(), "tessera");
  EXPECT_EQ(listed.ran().training().precision(), "bf16");
  EXPECT_EQ(listed.ran().cluster().gpu().preset(), "h100-sxm");
  const v1::Recommendation r = Recommendation(s, id);
  EXPECT_EQ(r.best_throughput().provenance(), v1::MEASURED);
  EXPECT_EQ(r.best_throughput().layout().dp(), 2);  // the study's layout
  EXPECT_NE(r.best_throughput().why().find("measured at dp 1 of 2; scaled x"),
            std::string::npos)
      << r.best_throughput().why();
}

}  // namespace
}  // namespace tessera::service::testing
