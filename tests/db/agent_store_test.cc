// Agents, probes and calibrations in the SQLite store.
#include <cmath>

#include "absl/strings/match.h"
#include "db/sqlite_trial_store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace tessera::db {
namespace {

using ::tessera::db::testing::SampleAgent;
using ::tessera::db::testing::SampleResult;
using ::tessera::db::testing::SampleTrial;
using ::tessera::db::testing::With;
using AgentStoreTest = ::tessera::db::testing::StoreTest;

TEST_F(AgentStoreTest, UpsertRegistersThenUpdates) {
  const AgentRegistration in = SampleAgent("node-1");
  absl::StatusOr<Agent> a = store_->UpsertAgent(in);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->info.id, "node-1");
  EXPECT_EQ(a->info.hostname, in.hostname);
  EXPECT_EQ(a->info.backend, "cuda");
  EXPECT_EQ(a->info.gpu_name, in.gpu_name);
  EXPECT_EQ(a->info.gpu_count, 8);
  EXPECT_EQ(a->info.memory_bytes, in.memory_bytes);
  EXPECT_EQ(a->info.driver, "550.54");
  EXPECT_EQ(a->info.interconnect, "nvlink");
  EXPECT_EQ(a->info.address, "10.0.0.6:7070");
  EXPECT_EQ(a->state, AgentState::kActive);
  EXPECT_EQ(a->registered_at, clock_.Now());
  EXPECT_EQ(a->last_heartbeat_at, clock_.Now());
  const absl::Time registered = clock_.Now();

  ASSERT_TRUE(store_->MarkAgentGone("node-1").ok());
  EXPECT_EQ(store_->GetAgent("node-1")->state, AgentState::kGone);
  clock_.Advance(absl::Minutes(3));
  AgentRegistration again = in;
  again.backend = "cpu";
  again.cpu_ranks = 4;
  again.gpu_count = 0;
  again.address = "10.0.0.99:7070";
  a = store_->UpsertAgent(again);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->info.backend, "cpu");
  EXPECT_EQ(a->info.cpu_ranks, 4);
  EXPECT_EQ(a->info.gpu_count, 0);
  EXPECT_EQ(a->info.address, "10.0.0.99:7070");
  EXPECT_EQ(a->state, AgentState::kActive);  // back again
  EXPECT_EQ(a->registered_at, registered);   // first registration kept
  EXPECT_EQ(a->last_heartbeat_at, clock_.Now());
  EXPECT_EQ(store_->ListAgents(std::nullopt)->size(), 1u);
}

TEST_F(AgentStoreTest, UpsertAssignsAnIdWhenNoneIsGiven) {
  AgentRegistration a = SampleAgent("");
  a.hostname = "gpu node/7";
  auto first = store_->UpsertAgent(a);
  auto second = store_->UpsertAgent(a);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->info.id, "gpu-node-7-1");
  EXPECT_EQ(second->info.id, "gpu-node-7-2");
}

TEST_F(AgentStoreTest, UpsertRejectsBadFieldsAndWritesNothing) {
  Register("keep");
  const std::pair<std::function<void(AgentRegistration&)>, const char*>
      cases[] = {
          {[](AgentRegistration& a) { a.id = "has space"; }, "agent.id"},
          {[](AgentRegistration& a) { a.id = std::string(129, 'x'); },
           "agent.id"},
          {[](AgentRegistration& a) { a.hostname = ""; }, "agent.hostname"},
          {[](AgentRegistration& a) { a.backend = "tpu"; }, "agent.backend"},
          {[](AgentRegistration& a) { a.gpu_count = -1; }, "agent.gpu_count"},
          {[](AgentRegistration& a) { a.memory_bytes = -1; },
           "agent.memory_bytes"},
          {[](AgentRegistration& a) { a.cpu_ranks = -2; }, "agent.cpu_ranks"},
      };
  for (const auto& [mutate, field] : cases) {
    AgentRegistration a = SampleAgent("keep");
    mutate(a);
    ExpectErrorWritesNothing([&] { return store_->UpsertAgent(a).status(); },
                             absl::StatusCode::kInvalidArgument, field);
  }
}

TEST_F(AgentStoreTest, HeartbeatsAndStaleAgents) {
  Register("a");
  Register("b");
  Register("c");
  ExpectErrorWritesNothing(
      [&] { return store_->Heartbeat("ghost", clock_.Now()); },
      absl::StatusCode::kNotFound, "agent ghost");
  clock_.Advance(absl::Seconds(30));
  ASSERT_TRUE(store_->Heartbeat("b", clock_.Now()).ok());
  EXPECT_EQ(store_->GetAgent("b")->last_heartbeat_at, clock_.Now());
  ASSERT_TRUE(store_->MarkAgentGone("c").ok());
  ExpectErrorWritesNothing([&] { return store_->Heartbeat("c", clock_.Now()); },
                           absl::StatusCode::kFailedPrecondition,
                           "register again");

  auto stale = store_->ListStaleAgents(clock_.Now(), absl::Seconds(20));
  ASSERT_TRUE(stale.ok());
  ASSERT_EQ(stale->size(), 1u);  // not b (fresh), not c (gone)
  EXPECT_EQ(stale->front().info.id, "a");
  stale = store_->ListStaleAgents(clock_.Now(), absl::Seconds(30));
  EXPECT_TRUE(stale->empty());  // exactly 30 s old is not older than 30 s

  auto gone = store_->ListAgents(AgentState::kGone);
  ASSERT_TRUE(gone.ok());
  ASSERT_EQ(gone->size(), 1u);
  EXPECT_EQ(gone->front().info.id, "c");
  auto active = store_->ListAgents(AgentState::kActive);
  ASSERT_EQ(active->size(), 2u);
  EXPECT_EQ((*active)[0].info.id, "a");
  EXPECT_EQ((*active)[1].info.id, "b");
  ExpectErrorWritesNothing([&] { return store_->MarkAgentGone("ghost"); },
                           absl::StatusCode::kNotFound, "agent ghost");
  EXPECT_EQ(store_->GetAgent("ghost").status().code(),
            absl::StatusCode::kNotFound);
}

Probe MakeProbe(absl::string_view kind, int64_t group_size, double value,
                absl::Time at) {
  Probe p;
  p.kind = std::string(kind);
  p.group_size = group_size;
  p.bytes = kind == "gemm" ? 0 : 1 << 28;
  p.value = value;
  p.unit = kind == "gemm" ? "GFLOP/s" : "GB/s";
  p.measured_at = at;
  return p;
}

TEST_F(AgentStoreTest, ProbesAreStoredAllOrNoneAndListed) {
  Register("a");
  Register("b");
  const absl::Time t0 = clock_.Now();
  auto ids = store_->AddProbes(
      "a", {MakeProbe("gemm", 1, 700'000, t0),
            MakeProbe("allreduce", 8, 350, t0 + absl::Seconds(1))});
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_EQ(ids->size(), 2u);
  ASSERT_TRUE(store_
                  ->AddProbes("b", {MakeProbe("allreduce", 8, 340,
                                              t0 + absl::Seconds(2))})
                  .ok());
  auto all = store_->ListProbes({});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, (*ids)[0]);
  EXPECT_EQ((*all)[0].agent_id, "a");
  EXPECT_EQ((*all)[0].kind, "gemm");
  EXPECT_EQ((*all)[0].unit, "GFLOP/s");
  EXPECT_EQ((*all)[0].value, 700'000);
  EXPECT_EQ((*all)[0].measured_at, t0);
  EXPECT_EQ((*all)[1].group_size, 8);
  EXPECT_EQ((*all)[1].bytes, 1 << 28);
  EXPECT_EQ(
      store_->ListProbes(With<ProbeFilter>([](auto& f) { f.agent_id = "a"; }))
          ->size(),
      2u);
  auto ar = store_->ListProbes(
      With<ProbeFilter>([](auto& f) { f.kind = "allreduce"; }));
  ASSERT_EQ(ar->size(), 2u);
  EXPECT_EQ((*ar)[1].agent_id, "b");
  EXPECT_EQ(store_
                ->ListProbes(With<ProbeFilter>([](auto& f) {
                  f.agent_id = "b";
                  f.kind = "gemm";
                }))
                ->size(),
            0u);

  Probe bad = MakeProbe("gemm", 0, 1, t0);
  ExpectErrorWritesNothing(
      [&] {
        return store_->AddProbes("a", {MakeProbe("gemm", 1, 1, t0), bad})
            .status();
      },
      absl::StatusCode::kInvalidArgument, "probes[1].group_size");
  bad = MakeProbe("gemm", 1, std::nan(""), t0);
  ExpectErrorWritesNothing(
      [&] { return store_->AddProbes("a", {bad}).status(); },
      absl::StatusCode::kInvalidArgument, "probes[0].value");
  bad = MakeProbe("", 1, 1, t0);
  ExpectErrorWritesNothing(
      [&] { return store_->AddProbes("a", {bad}).status(); },
      absl::StatusCode::kInvalidArgument, "probes[0].kind");
  ExpectErrorWritesNothing(
      [&] {
        return store_->AddProbes("ghost", {MakeProbe("gemm", 1, 1, t0)})
            .status();
      },
      absl::StatusCode::kNotFound, "agent ghost");
}

TEST_F(AgentStoreTest, LatestCalibrationPerScope) {
  const int64_t study = MakeStudy();
  Calibration c;
  c.scope = StudyScope(study);
  c.coefficients = {{"fsdp_overlap_efficiency", 0.7},
                    {"gemm_efficiency", 0.55}};
  c.samples = 6;
  c.fit_error = 0.08;
  auto first = store_->SaveCalibration(c);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_GT(first->id, 0);
  EXPECT_EQ(first->created_at, clock_.Now());
  clock_.Advance(absl::Minutes(1));
  c.coefficients["fsdp_overlap_efficiency"] = 0.65;
  c.samples = 9;
  auto second = store_->SaveCalibration(c);
  ASSERT_TRUE(second.ok());
  Calibration global = c;
  global.scope = GpuScope("H100-SXM");
  global.coefficients = {{"gemm_efficiency", 0.6}};
  ASSERT_TRUE(store_->SaveCalibration(global).ok());

  auto latest = store_->LatestCalibration(StudyScope(study));
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->id, second->id);
  EXPECT_EQ(latest->scope, StudyScope(study));
  EXPECT_EQ(latest->coefficients, c.coefficients);
  EXPECT_EQ(latest->samples, 9);
  EXPECT_DOUBLE_EQ(latest->fit_error, 0.08);
  EXPECT_EQ(latest->created_at, clock_.Now());
  EXPECT_EQ(store_->LatestCalibration(GpuScope("H100-SXM"))->coefficients,
            global.coefficients);
  EXPECT_EQ(store_->LatestCalibration(GpuScope("A100")).status().code(),
            absl::StatusCode::kNotFound);

  const std::pair<std::function<void(Calibration&)>, const char*> cases[] = {
      {[](Calibration& x) { x.scope = "node:1"; }, "calibration.scope"},
      {[](Calibration& x) { x.scope = "gpu:"; }, "calibration.scope"},
      {[](Calibration& x) { x.coefficients.clear(); },
       "calibration.coefficients"},
      {[](Calibration& x) { x.coefficients["bad"] = std::nan(""); },
       "calibration.coefficients.bad"},
      {[](Calibration& x) { x.samples = -1; }, "calibration.samples"},
      {[](Calibration& x) { x.fit_error = -0.1; }, "calibration.fit_error"},
      {[](Calibration& x) { x.scope = "study:abc"; }, "has no study id"},
  };
  for (const auto& [mutate, field] : cases) {
    Calibration bad = c;
    mutate(bad);
    ExpectErrorWritesNothing(
        [&] { return store_->SaveCalibration(bad).status(); },
        absl::StatusCode::kInvalidArgument, field);
  }
  Calibration unknown_study = c;
  unknown_study.scope = StudyScope(9999);
  ExpectErrorWritesNothing(
      [&] { return store_->SaveCalibration(unknown_study).status(); },
      absl::StatusCode::kNotFound, "study 9999");
}

TEST_F(AgentStoreTest, CalibrationsKeepTheirTrials) {
  const int64_t study = MakeStudy();
  const std::vector<int64_t> trials =
      MakeTrials(study, {SampleTrial(1), SampleTrial(2), SampleTrial(4)});
  Calibration c;
  c.scope = GpuScope("H100-SXM");
  c.coefficients = {{"gemm_peak_efficiency", 0.6}};
  c.samples = 2;
  c.trial_ids = {trials[0], trials[2]};
  c.excluded_trial_ids = {trials[1]};
  ASSERT_TRUE(store_->SaveCalibration(c).ok());
  Calibration mine = c;
  mine.scope = StudyScope(study);
  mine.trial_ids = {trials[0]};
  mine.excluded_trial_ids = {};
  ASSERT_TRUE(store_->SaveCalibration(mine).ok());

  auto latest = store_->LatestCalibration(GpuScope("H100-SXM"));
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->trial_ids, c.trial_ids);
  EXPECT_EQ(latest->excluded_trial_ids, c.excluded_trial_ids);
  // Only the latest calibration of a scope counts.
  EXPECT_EQ(
      *store_->ScopesCalibratedWith(trials[0]),
      (std::vector<std::string>{GpuScope("H100-SXM"), StudyScope(study)}));
  EXPECT_EQ(*store_->ScopesCalibratedWith(trials[1]),
            std::vector<std::string>{GpuScope("H100-SXM")});
  mine.trial_ids = {trials[2]};
  ASSERT_TRUE(store_->SaveCalibration(mine).ok());
  EXPECT_EQ(*store_->ScopesCalibratedWith(trials[0]),
            std::vector<std::string>{GpuScope("H100-SXM")});

  // Unknown or repeated trials are refused, and nothing is written.
  Calibration bad = c;
  bad.trial_ids = {trials[0], 9999};
  ExpectErrorWritesNothing(
      [&] { return store_->SaveCalibration(bad).status(); },
      absl::StatusCode::kNotFound, "trial 9999");
  bad.trial_ids = {trials[0]};
  bad.excluded_trial_ids = {trials[0]};
  ExpectErrorWritesNothing(
      [&] { return store_->SaveCalibration(bad).status(); },
      absl::StatusCode::kInvalidArgument, "calibration.trial_ids");
}

TEST_F(AgentStoreTest, InvalidateTrialOnlyFinishedWithAReason) {
  const int64_t study = MakeStudy();
  const int64_t trial = MakeTrials(study, {SampleTrial()})[0];
  ExpectErrorWritesNothing(
      [&] { return store_->InvalidateTrial(trial, "bogus"); },
      absl::StatusCode::kFailedPrecondition, "is queued");
  Register("node-1");
  ASSERT_TRUE(
      store_->LeaseTrial(trial, {"node-1"}, clock_.Now() + absl::Minutes(1))
          .ok());
  ASSERT_TRUE(
      store_->ReportTrial(trial, "node-1", SampleResult(), clock_.Now()).ok());
  ExpectErrorWritesNothing([&] { return store_->InvalidateTrial(trial, ""); },
                           absl::StatusCode::kInvalidArgument, "reason");
  ExpectErrorWritesNothing(
      [&] { return store_->InvalidateTrial(9999, "bogus"); },
      absl::StatusCode::kNotFound, "9999");
  ASSERT_TRUE(store_->InvalidateTrial(trial, "GPU 3 throttled").ok());
  const Trial t = GetTrialOrDie(trial);
  EXPECT_EQ(t.status, TrialState::kInvalid);
  EXPECT_EQ(t.reason, "invalidated: GPU 3 throttled");
  EXPECT_TRUE(t.measured.has_value());
}

TEST_F(AgentStoreTest, ImportedCalibrationsPerGpuLatestWins) {
  EXPECT_EQ(store_->LatestImportedCalibration("h100-sxm").status().code(),
            absl::StatusCode::kNotFound);
  ImportedCalibration i;
  i.gpu = "h100-sxm";
  i.file_json = R"({"format": "tessera-calibration/1", "samples": 1})";
  i.source = "cal.json";
  auto first = store_->SaveImportedCalibration(i);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_GT(first->id, 0);
  EXPECT_EQ(first->imported_at, clock_.Now());
  clock_.Advance(absl::Minutes(1));
  i.file_json = R"({"format": "tessera-calibration/1", "samples": 2})";
  i.source = "later.json";
  auto second = store_->SaveImportedCalibration(i);
  ASSERT_TRUE(second.ok());
  ImportedCalibration other = i;
  other.gpu = "a100-40g";
  other.file_json = "{}";
  ASSERT_TRUE(store_->SaveImportedCalibration(other).ok());

  auto latest = store_->LatestImportedCalibration("h100-sxm");
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->id, second->id);
  EXPECT_EQ(latest->gpu, "h100-sxm");
  EXPECT_EQ(latest->file_json, i.file_json);
  EXPECT_EQ(latest->source, "later.json");
  EXPECT_EQ(latest->imported_at, clock_.Now());
  EXPECT_EQ(store_->LatestImportedCalibration("a100-40g")->file_json, "{}");

  const std::pair<std::function<void(ImportedCalibration&)>, const char*>
      cases[] = {
          {[](ImportedCalibration& x) { x.gpu = ""; },
           "imported_calibration.gpu"},
          {[](ImportedCalibration& x) { x.file_json = "[1, 2]"; },
           "imported_calibration.file_json"},
          {[](ImportedCalibration& x) { x.file_json = "{\"a\": "; },
           "imported_calibration.file_json"},
      };
  for (const auto& [mutate, field] : cases) {
    ImportedCalibration bad = i;
    mutate(bad);
    ExpectErrorWritesNothing(
        [&] { return store_->SaveImportedCalibration(bad).status(); },
        absl::StatusCode::kInvalidArgument, field);
  }
}

TEST_F(AgentStoreTest, CollectiveSamplesByClusterAllOrNone) {
  CollectiveSample s;
  s.cluster = "agents/cpu/host-a";
  s.collective = "all_gather";
  s.nodes = 2;
  s.gpus_per_node = 4;
  s.bytes = 1 << 20;
  s.busbw_gbs = 2.5;
  s.agent_ids = "a,b";
  CollectiveSample t = s;
  t.collective = "sendrecv";
  t.busbw_gbs = 3.5;
  CollectiveSample elsewhere = s;
  elsewhere.cluster = "h100-sxm";
  auto ids = store_->AddCollectiveSamples({s, t, elsewhere});
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->size(), 3u);
  auto listed = store_->ListCollectiveSamples("agents/cpu/host-a");
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].collective, "all_gather");
  EXPECT_EQ((*listed)[0].nodes, 2);
  EXPECT_EQ((*listed)[0].gpus_per_node, 4);
  EXPECT_EQ((*listed)[0].bytes, 1 << 20);
  EXPECT_EQ((*listed)[0].agent_ids, "a,b");
  EXPECT_EQ((*listed)[0].measured_at, clock_.Now());
  EXPECT_EQ((*listed)[1].busbw_gbs, 3.5);
  EXPECT_TRUE(store_->ListCollectiveSamples("nowhere")->empty());

  const std::pair<std::function<void(CollectiveSample&)>, const char*> cases[] =
      {
          {[](CollectiveSample& x) { x.cluster = ""; },
           "collective_samples[1].cluster"},
          {[](CollectiveSample& x) { x.collective = "broadcast"; },
           "collective_samples[1].collective"},
          {[](CollectiveSample& x) { x.nodes = 0; },
           "collective_samples[1].nodes"},
          {[](CollectiveSample& x) { x.bytes = 0; },
           "collective_samples[1].bytes"},
          {[](CollectiveSample& x) { x.busbw_gbs = -1; },
           "collective_samples[1].busbw_gbs"},
          {[](CollectiveSample& x) { x.busbw_gbs = std::nan(""); },
           "collective_samples[1].busbw_gbs"},
      };
  for (const auto& [mutate, field] : cases) {
    CollectiveSample bad = s;
    mutate(bad);
    ExpectErrorWritesNothing(
        [&] {
          return store_->AddCollectiveSamples({s, bad}).status();
        },
        absl::StatusCode::kInvalidArgument, field);
    EXPECT_EQ(store_->ListCollectiveSamples(s.cluster)->size(), 2u) << field;
  }
}

}  // namespace
}  // namespace tessera::db
