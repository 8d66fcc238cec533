// The study loop replayed on an in-process planner against synthetic
// sweeps whose truth is known: measurements that are the model's own
// predictions (a model with no error), or that error by a known factor.
#include "replay/study_replay.h"

#include <algorithm>
#include <map>

#include "gtest/gtest.h"
#include "costmodel/stacks/stack_calibration.h"
#include "proto/convert.h"
#include "replay/sweep_replay.h"
#include "service/plan_convert.h"

namespace tessera::replay {
namespace {

// A 1.3B Llama on one node of 8 H100s under nanotron, and its layouts of
// tp, pp and micro-batch the stack runs (zero 1, no recompute).
v1::StudySpec Spec(int64_t nodes) {
  v1::StudySpec spec;
  v1::ModelSpec* m = spec.mutable_model();
  m->set_layers(16);
  m->set_hidden(2048);
  m->set_heads(32);
  m->set_kv_heads(32);
  m->set_ffn_hidden(8192);
  m->set_vocab(131072);
  m->set_tie_embeddings(true);
  spec.mutable_cluster()->mutable_gpu()->set_preset("h100-sxm");
  spec.mutable_cluster()->set_nodes(nodes);
  spec.mutable_cluster()->set_gpus_per_node(8);
  spec.mutable_training()->set_global_batch(256);
  spec.mutable_training()->set_seq_len(4096);
  spec.mutable_training()->set_stack("nanotron");
  spec.set_name(absl::StrCat("synthetic ", nodes, "x8"));
  return spec;
}

// Every layout of the spec with the model's prediction as its measurement
// times `error(layout)`; layouts the model calls infeasible are failures.
SweepGroup Synthetic(int64_t nodes,
                     const std::function<double(const Layout&)>& error) {
  SweepGroup g;
  g.spec = Spec(nodes);
  g.name = g.spec.name();
  g.workload = *CheckedWorkloadFromSpec(g.spec);
  const costmodel::Calibration c = *costmodel::DefaultCalibration(g.workload);
  int64_t index = 0;
  for (int64_t tp : {1, 2, 4, 8}) {
    for (int64_t pp : {1, 2, 4}) {
      for (int64_t mb : {1, 2, 4}) {
        Layout l;
        l.tp = tp;
        l.sp = tp > 1;
        l.pp = pp;
        l.zero = 1;
        l.micro_batch = mb;
        const costmodel::LayoutEvaluation e = costmodel::PredictLayout(g.workload, l, c);
        if (!e.feasible && e.reason.rfind("memory", 0) != 0) continue;
        SweepRow r;
        r.index = index++;
        r.layout = e.layout;
        if (e.feasible) {
          r.tokens_per_s_per_gpu =
              e.prediction.tokens_per_s_per_gpu * error(e.layout);
        } else {
          r.outcome = TrialStatus::kOom;
        }
        g.rows.push_back(r);
      }
    }
  }
  return g;
}

ReplayOptions Quiet(double noise = 0) {
  ReplayOptions o;
  o.noise_log_sd = noise;
  return o;
}

TEST(StudyReplayTest, AModelWithoutErrorFindsTheBestWithItsFirstTrial) {
  const SweepGroup g = Synthetic(1, [](const Layout&) { return 1.0; });
  ASSERT_GE(g.OkRows(), 10);
  absl::StatusOr<std::unique_ptr<StudyReplayer>> r = StudyReplayer::Create("");
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<StudyReplay> s = (*r)->Replay(g, Quiet());
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_FALSE(s->trials.empty());
  EXPECT_EQ(s->state, "done") << s->reason;
  // Every trial is one of the group's layouts, run at full scale.
  std::map<std::string, const SweepRow*> rows;
  for (const SweepRow& row : g.rows) rows[SweepKey(row.layout)] = &row;
  for (const ReplayedTrial& t : s->trials) {
    ASSERT_TRUE(rows.count(SweepKey(t.layout))) << FormatLayout(t.layout);
    EXPECT_EQ(t.sweep_row, rows[SweepKey(t.layout)]->index);
    EXPECT_GT(t.gpu_seconds, 0);
  }
  EXPECT_EQ(SweepKey(s->trials.front().layout), SweepKey(s->model_order[0]));
  EXPECT_DOUBLE_EQ(s->trials.front().true_tokens_per_s_per_gpu,
                   g.BestTokensPerSPerGpu());
  ASSERT_TRUE(s->recommended.has_value());
  EXPECT_TRUE(s->recommended_measured);
  EXPECT_DOUBLE_EQ(s->recommended_true_tokens_per_s_per_gpu,
                   g.BestTokensPerSPerGpu());
}

TEST(StudyReplayTest, TheSameSeedReplaysTheSameStudy) {
  const SweepGroup g = Synthetic(1, [](const Layout& l) {
    return l.pp > 1 ? 1.15 : 1.0;  // the model under-rates pipelines
  });
  auto run = [&](uint64_t seed) {
    std::unique_ptr<StudyReplayer> r = *StudyReplayer::Create("");
    ReplayOptions o = Quiet(0.05);
    o.seed = seed;
    return *r->Replay(g, o);
  };
  const StudyReplay a = run(7), b = run(7), c = run(8);
  ASSERT_EQ(a.trials.size(), b.trials.size());
  bool differs = a.trials.size() != c.trials.size();
  for (size_t i = 0; i < a.trials.size(); ++i) {
    EXPECT_EQ(SweepKey(a.trials[i].layout), SweepKey(b.trials[i].layout));
    EXPECT_DOUBLE_EQ(a.trials[i].measured_tokens_per_s_per_gpu,
                     b.trials[i].measured_tokens_per_s_per_gpu);
    if (i < c.trials.size()) {
      differs = differs || a.trials[i].measured_tokens_per_s_per_gpu !=
                               c.trials[i].measured_tokens_per_s_per_gpu;
    }
  }
  EXPECT_TRUE(differs) << "another seed draws other noise";
}

TEST(StudyReplayTest, ModelOrderIsThePlansRankingThenTheInfeasible) {
  const SweepGroup g = Synthetic(1, [](const Layout&) { return 1.0; });
  std::unique_ptr<StudyReplayer> r = *StudyReplayer::Create("");
  absl::StatusOr<std::vector<Layout>> order = r->ModelOrder(g, Quiet());
  ASSERT_TRUE(order.ok()) << order.status();
  ASSERT_EQ(order->size(), g.rows.size());
  // The feasible first, by predicted (here: measured) tokens/s.
  std::map<std::string, const SweepRow*> rows;
  for (const SweepRow& row : g.rows) rows[SweepKey(row.layout)] = &row;
  double last = 1e300;
  bool infeasible_seen = false;
  for (const Layout& l : *order) {
    const SweepRow* row = rows[SweepKey(l)];
    ASSERT_NE(row, nullptr);
    if (row->outcome != TrialStatus::kOk) {
      infeasible_seen = true;
      continue;
    }
    EXPECT_FALSE(infeasible_seen) << "a feasible layout after an infeasible";
    EXPECT_LE(row->tokens_per_s_per_gpu, last * (1 + 1e-12));
    last = row->tokens_per_s_per_gpu;
  }
}

}  // namespace
}  // namespace tessera::replay

namespace tessera::replay {
namespace {

// A model error of known size: with no noise, a study's choices depend only
// on what it measured, so on a sweep that the model predicts exactly but for
// one layout, 8% faster in truth than the model's best, the study runs the
// same trials as on the exact sweep until it reaches that layout, and holds
// it from then on: the number of trials is that layout's place in the exact
// sweep's study.
TEST(StudyReplayTest, AKnownModelErrorIsFoundInThePredictedNumberOfTrials) {
  const SweepGroup exact = Synthetic(1, [](const Layout&) { return 1.0; });
  const StudyReplay reference = *(*StudyReplayer::Create(""))->Replay(exact, Quiet());
  ASSERT_GE(reference.trials.size(), 3u);
  const std::string third = SweepKey(reference.trials[2].layout);
  double top = 0;
  for (const SweepRow& row : exact.rows) {
    top = std::max(top, row.tokens_per_s_per_gpu);
  }
  SweepGroup g = exact;
  for (SweepRow& row : g.rows) {
    if (SweepKey(row.layout) == third) row.tokens_per_s_per_gpu = 1.08 * top;
  }
  SweepReplayOptions o;
  o.strategies = {"study"};
  o.study = Quiet();
  MeasuredSweep sweep;
  sweep.groups = {g};
  const SweepReplayReport report = *ReplaySweep(sweep, o);
  const GroupScore& score = report.strategies[0].groups[0];
  const StudyReplay& s = *score.study;
  ASSERT_GE(s.trials.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(SweepKey(s.trials[i].layout), SweepKey(reference.trials[i].layout))
        << "trial " << i + 1;
  }
  ASSERT_TRUE(score.score.trials_to_1pct.has_value());
  EXPECT_EQ(*score.score.trials_to_1pct, 3);
  EXPECT_EQ(score.score.failed_trials, 0);
  // The recommendation is the layout the trials found.
  ASSERT_TRUE(s.recommended.has_value());
  EXPECT_EQ(SweepKey(*s.recommended), third);
  EXPECT_NEAR(*score.final_regret, 0, 1e-12);
}

// The model's best runs out of memory: the next trial is the best predicted
// layout that needs less memory than it, and the layouts predicted to need
// as much are never tried.
TEST(StudyReplayTest, AnOutOfMemoryBestIsFollowedByOneThatNeedsLess) {
  const SweepGroup plain = Synthetic(1, [](const Layout&) { return 1.0; });
  std::unique_ptr<StudyReplayer> r = *StudyReplayer::Create("");
  const std::vector<Layout> order = *r->ModelOrder(plain, Quiet());
  SweepGroup g = plain;
  for (SweepRow& row : g.rows) {
    if (SweepKey(row.layout) == SweepKey(order[0])) {
      row.outcome = TrialStatus::kOom;
    }
  }
  const costmodel::Calibration c = *costmodel::DefaultCalibration(g.workload);
  auto memory = [&](const Layout& l) {
    return costmodel::PredictLayout(g.workload, l, c)
        .prediction.memory.total_bytes;
  };
  absl::StatusOr<StudyReplay> s = r->Replay(g, Quiet());
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_GE(s->trials.size(), 2u);
  EXPECT_EQ(s->trials[0].outcome, TrialStatus::kOom);
  const double bound = memory(order[0]);
  for (size_t i = 1; i < s->trials.size(); ++i) {
    EXPECT_LT(memory(s->trials[i].layout), bound)
        << FormatLayout(s->trials[i].layout);
  }
  // The second trial: the best predicted of those below the bound.
  for (const Layout& l : order) {
    if (memory(l) < bound) {
      EXPECT_EQ(SweepKey(s->trials[1].layout), SweepKey(l));
      break;
    }
  }
}

// A past study of Tessera's own executor (`tessera trials -o json` of a cpu
// study) replays on agents of its own backend, and one replayer holds it
// beside a framework's study.
TEST(StudyReplayTest, AStudyOfTesserasOwnExecutorReplaysBesideAFrameworks) {
  SweepGroup own = Synthetic(1, [](const Layout&) { return 1.0; });
  own.spec.mutable_training()->set_stack("tessera");
  own.spec.mutable_trials()->set_backend("cpu");
  own.spec.set_name("own executor");
  own.name = own.spec.name();
  own.workload = *CheckedWorkloadFromSpec(own.spec);
  const SweepGroup framework = Synthetic(1, [](const Layout&) { return 1.0; });
  std::unique_ptr<StudyReplayer> r = *StudyReplayer::Create("");
  for (const SweepGroup* g : std::vector<const SweepGroup*>{&own, &framework}) {
    absl::StatusOr<StudyReplay> s = r->Replay(*g, Quiet());
    ASSERT_TRUE(s.ok()) << g->name << ": " << s.status();
    EXPECT_EQ(s->state, "done") << g->name << ": " << s->reason;
    EXPECT_FALSE(s->trials.empty()) << g->name;
  }
}

}  // namespace
}  // namespace tessera::replay
