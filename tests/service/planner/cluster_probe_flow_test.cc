// The cluster probe over the service (service/cluster_probe.h): an
// "agents" study queues a sweep between its agents, the sweep is leased to
// the gang before any trial, relayed, reported by node rank 0, stored, and
// the plans that follow use it.
#include <cstdio>
#include <memory>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "proto/convert.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

v1::Probe MakeProbe(const std::string& kind, int64_t group, int64_t bytes,
                    double value) {
  v1::Probe p;
  p.set_kind(kind);
  p.set_group_size(group);
  p.set_bytes(bytes);
  p.set_value(value);
  p.set_unit(kind == "gemm_f32" ? "TFLOP/s" : "GB/s");
  return p;
}

std::vector<v1::Probe> HostProbes() {
  return {MakeProbe("gemm_f32", 1, 0, 0.2),
          MakeProbe("memcpy", 1, 64 << 20, 12.5),
          MakeProbe("allreduce", 2, 16 << 20, 4.0),
          MakeProbe("allgather", 2, 16 << 20, 4.0),
          MakeProbe("reducescatter", 2, 16 << 20, 4.0)};
}

// What tessera-trial --probe-collectives writes for 2 nodes of 2 ranks,
// every collective at `busbw_gbs`.
std::string Sweep(double busbw_gbs, int64_t nodes = 2) {
  nlohmann::json list = nlohmann::json::array();
  for (const char* c :
       {"all_gather", "reduce_scatter", "all_reduce", "sendrecv"}) {
    for (int64_t bytes : {int64_t{1} << 16, int64_t{16} << 20}) {
      list.push_back({{"collective", c},
                      {"nodes", nodes},
                      {"gpus_per_node", 2},
                      {"bytes", bytes},
                      {"seconds", 1.0},
                      {"busbw_gbs", busbw_gbs}});
    }
  }
  return nlohmann::json{{"collectives", list}}.dump();
}

v1::StudySpec AgentsSpec(int64_t nodes) {
  v1::StudySpec spec = TinySpec(nodes, 2);
  spec.mutable_cluster()->mutable_gpu()->set_preset("agents");
  return spec;
}

double PredictedStepS(TestServer& s, int64_t nodes, const char* layout) {
  v1::PredictRequest r;
  *r.mutable_study() = AgentsSpec(nodes);
  *r.mutable_layout() = LayoutToProto(*ParseLayout(layout));
  v1::PredictResponse out;
  const grpc::Status st = s.planner->Predict(Context().get(), r, &out);
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(out.evaluation().feasible());
  return out.evaluation().prediction().step_time_s();
}

class ClusterProbeFlowTest : public ::testing::Test {
 protected:
  ClusterProbeFlowTest() {
    PlannerOptions o = TestOptions(dir_.File("t.db"), clock_);
    o.cluster_probes = true;
    o.probe_max_bytes_cpu = 1 << 20;
    s_ = StartServer(o);
    a_ = std::make_unique<ScriptedAgent>(s_, "agent-a", "cpu", 2);
    b_ = std::make_unique<ScriptedAgent>(s_, "agent-b", "cpu", 2);
  }

  int64_t Submit(int64_t nodes) {
    v1::SubmitStudyRequest r;
    *r.mutable_spec() = AgentsSpec(nodes);
    v1::SubmitStudyResponse out;
    EXPECT_TRUE(s_.planner->SubmitStudy(Context().get(), r, &out).ok());
    return out.study_id();
  }

  // Two agents with probes: a (node rank 0) and b.
  void TwoAgents() {
    ASSERT_TRUE(a_->Register().ok());
    ASSERT_TRUE(b_->Register().ok());
    ASSERT_TRUE(a_->ReportProbes(HostProbes()).ok());
    ASSERT_TRUE(b_->ReportProbes(HostProbes()).ok());
  }

  // The probe's two assignments: a polls first and waits for its gang, b's
  // poll forms it, a's next poll delivers a's share.
  std::pair<v1::TrialAssignment, v1::TrialAssignment> LeaseProbe() {
    EXPECT_FALSE(a_->Lease().has_value());  // waits for b
    std::optional<v1::TrialAssignment> b = b_->Lease();
    std::optional<v1::TrialAssignment> a = a_->Lease();
    EXPECT_TRUE(a.has_value() && b.has_value());
    if (!a.has_value() || !b.has_value()) return {};
    return {*a, *b};
  }

  // The next lease either agent gets (a trial may need both: a gang).
  std::optional<v1::TrialAssignment> NextLease() {
    for (int round = 0; round < 2; ++round) {
      for (ScriptedAgent* agent : {a_.get(), b_.get()}) {
        if (std::optional<v1::TrialAssignment> t = agent->Lease()) return t;
      }
    }
    return std::nullopt;
  }

  TempDir dir_;
  ManualClock clock_;
  TestServer s_;
  std::unique_ptr<ScriptedAgent> a_, b_;  // after the server starts
};

TEST_F(ClusterProbeFlowTest, SweepRunsBeforeTrialsAndLaterPlansUseIt) {
  TwoAgents();
  // Before any sweep: the model's own figures between agents.
  const char* across = "dp=4,zero=3,micro_batch=2";  // 2 agents of 2 ranks
  const char* inside = "tp=2,micro_batch=4";         // 1 agent
  const double across_before = PredictedStepS(s_, 2, across);
  const double inside_before = PredictedStepS(s_, 1, inside);

  const int64_t study = Submit(2);
  const auto [a, b] = LeaseProbe();
  const int64_t probe = a.collective_probe_id();
  ASSERT_GT(probe, 0);
  EXPECT_EQ(b.collective_probe_id(), probe);
  EXPECT_EQ(a.trial_id(), 0);
  EXPECT_EQ(a.node_rank(), 0);  // agents by id
  EXPECT_EQ(b.node_rank(), 1);
  EXPECT_EQ(a.gang_size(), 2);
  EXPECT_EQ(a.ranks_per_node(), 2);
  EXPECT_EQ(a.world_size(), 4);
  EXPECT_EQ(a.backend(), "cpu");
  EXPECT_EQ(a.probe_max_bytes(), 1 << 20);
  EXPECT_GT(a.time_limit_s(), 0);

  // The relay: node rank 0 publishes, the other fetches; nobody else.
  EXPECT_EQ(b_->Publish(0, "10.0.0.2:1", probe).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(a_->Publish(0, "10.0.0.1:29500", probe).ok());
  std::string data;
  ASSERT_TRUE(b_->Fetch(0, 1000, &data, probe).ok());
  EXPECT_EQ(data, "10.0.0.1:29500");
  ScriptedAgent c(s_, "agent-c", "cpu", 2);
  ASSERT_TRUE(c.Register().ok());
  EXPECT_EQ(c.Fetch(0, 10, &data, probe).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  // Only node rank 0 reports; a malformed point names its field.
  EXPECT_EQ(b_->ReportSweep(probe, Sweep(0.01)).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(a_->ReportSweep(probe, Sweep(0.01)).ok());
  // Reported once: the probe is gone.
  EXPECT_EQ(a_->ReportSweep(probe, Sweep(0.01)).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  // The study's trials come next.
  std::optional<v1::TrialAssignment> trial = NextLease();
  ASSERT_TRUE(trial.has_value());
  EXPECT_EQ(trial->collective_probe_id(), 0);
  EXPECT_EQ(trial->study_id(), study);

  // 0.01 GB/s between agents: a layout across them is much slower now.
  EXPECT_GT(PredictedStepS(s_, 2, across), 3 * across_before);
  // Inside one agent: the agent's in-process collectives (4 GB/s) in place
  // of its copy rate (12.5 GB/s) for tensor parallelism's all-reduces.
  const double inside_after = PredictedStepS(s_, 1, inside);
  EXPECT_GT(inside_after, inside_before);
  // ... and not the 0.01 GB/s between agents: one agent was measured on
  // its own.
  EXPECT_LT(inside_after, 3 * inside_before);
  std::printf("across %g -> %g s, inside %g -> %g s\n", across_before,
              PredictedStepS(s_, 2, across), inside_before, inside_after);

  // A later study on the same cluster needs no second sweep.
  Submit(2);
  std::optional<v1::TrialAssignment> next = NextLease();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->collective_probe_id(), 0);
}

TEST_F(ClusterProbeFlowTest, TheSweepGoesBeforeEvenOneAgentTrials) {
  TwoAgents();
  Submit(1);  // trials on one agent each: either could start one now
  EXPECT_FALSE(a_->Lease().has_value()) << "a waits for the probe's gang";
  std::optional<v1::TrialAssignment> b = b_->Lease();
  ASSERT_TRUE(b.has_value());
  EXPECT_GT(b->collective_probe_id(), 0);
}

TEST_F(ClusterProbeFlowTest, NoSweepOfCpuAgentsForAnH100Study) {
  TwoAgents();
  v1::SubmitStudyRequest r;
  *r.mutable_spec() = TinySpec(1, 2);  // h100-sxm, trials on cpu agents
  v1::SubmitStudyResponse out;
  ASSERT_TRUE(s_.planner->SubmitStudy(Context().get(), r, &out).ok());
  std::optional<v1::TrialAssignment> t = a_->Lease();
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->collective_probe_id(), 0);
  EXPECT_EQ(t->study_id(), out.study_id());
}

TEST_F(ClusterProbeFlowTest, FailedSweepsAreRetriedOnceThenDropped) {
  TwoAgents();
  const int64_t study = Submit(2);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto [a, b] = LeaseProbe();
    ASSERT_GT(a.collective_probe_id(), 0) << "attempt " << attempt;
    // A sweep that failed is a report received.
    ASSERT_TRUE(a_->ReportSweep(a.collective_probe_id(),
                                R"({"collectives": [], "error": "rendezvous: )"
                                R"(timed out"})")
                    .ok());
  }
  std::optional<v1::TrialAssignment> trial = NextLease();
  ASSERT_TRUE(trial.has_value());
  EXPECT_EQ(trial->collective_probe_id(), 0);
  EXPECT_EQ(trial->study_id(), study);
}

TEST_F(ClusterProbeFlowTest, AMalformedSweepIsRefusedAndDropped) {
  TwoAgents();
  Submit(2);
  const auto [a, b] = LeaseProbe();
  const int64_t probe = a.collective_probe_id();
  ASSERT_GT(probe, 0);
  // Measured on other nodes than the probe ran.
  const grpc::Status s = a_->ReportSweep(probe, Sweep(1.0, /*nodes=*/4));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("collectives[0]"), std::string::npos)
      << s.error_message();
  const grpc::Status negative = a_->ReportSweep(probe, Sweep(-1.0));
  EXPECT_EQ(negative.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << "dropped after the malformed report";
  std::optional<v1::TrialAssignment> trial = NextLease();
  ASSERT_TRUE(trial.has_value());
  EXPECT_EQ(trial->collective_probe_id(), 0);
}

TEST_F(ClusterProbeFlowTest, ExpiredProbeLeasesAreLeasedAgain) {
  TwoAgents();
  Submit(2);
  const auto [a, b] = LeaseProbe();
  const int64_t probe = a.collective_probe_id();
  ASSERT_GT(probe, 0);
  clock_.Advance(absl::Minutes(5));  // past the probe's lease
  ASSERT_TRUE(a_->Register().ok());  // still alive after the jump
  ASSERT_TRUE(b_->Register().ok());
  const auto [a2, b2] = LeaseProbe();
  EXPECT_EQ(a2.collective_probe_id(), probe);
  ASSERT_TRUE(a_->ReportSweep(probe, Sweep(2.0)).ok());
}

}  // namespace
}  // namespace tessera::service::testing
