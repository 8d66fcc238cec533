// The "agents" GPU preset: the study waits for an agent's probes, then plans
// for one agent rank as its GPU.
#include "gtest/gtest.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

v1::Probe MakeProbe(const std::string& kind, int64_t group, int64_t bytes,
                    double value, const std::string& unit) {
  v1::Probe p;
  p.set_kind(kind);
  p.set_group_size(group);
  p.set_bytes(bytes);
  p.set_value(value);
  p.set_unit(unit);
  return p;
}

TEST(AgentsPresetTest, TheGpuIsBuiltFromTheFirstAgentsProbes) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  v1::StudySpec spec = TinySpec(1, 2);
  spec.mutable_cluster()->mutable_gpu()->set_preset("agents");
  spec.mutable_cluster()->mutable_gpu()->set_idle_w(1.5);  // an override
  v1::SubmitStudyRequest r;
  *r.mutable_spec() = spec;
  v1::SubmitStudyResponse out;
  ASSERT_TRUE(s.planner->SubmitStudy(Context().get(), r, &out).ok());
  const int64_t id = out.study_id();

  // No agent yet: queued, no recommendation, a plan cannot be made.
  v1::GetStudyResponse st = GetStudy(s, id);
  EXPECT_EQ(st.study().state(), v1::STUDY_QUEUED);
  EXPECT_EQ(st.study().gpu(), "agents");
  EXPECT_NE(st.study().state_reason().find("probes"), std::string::npos);
  v1::GetRecommendationRequest rr;
  rr.set_study_id(id);
  v1::Recommendation rec;
  EXPECT_EQ(
      s.planner->GetRecommendation(Context().get(), rr, &rec).error_code(),
      grpc::StatusCode::FAILED_PRECONDITION);
  v1::PlanRequest plan;
  *plan.mutable_study() = spec;
  v1::PlanResponse planned;
  EXPECT_EQ(s.planner->Plan(Context().get(), plan, &planned).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  // An agent registers: still no probes, still queued.
  ScriptedAgent agent(s, "cpu-a", "cpu", 2);
  ASSERT_TRUE(agent.Register().ok());
  EXPECT_EQ(GetStudy(s, id).study().state(), v1::STUDY_QUEUED);
  ASSERT_TRUE(agent
                  .ReportProbes({
                      MakeProbe("gemm_f32", 1, 0, 0.2, "TFLOP/s"),
                      MakeProbe("memcpy", 1, 64 << 20, 12.5, "GB/s"),
                      MakeProbe("allreduce", 2, 1 << 20, 3.0, "GB/s"),
                      MakeProbe("allreduce", 2, 16 << 20, 4.0, "GB/s"),
                      MakeProbe("allgather", 2, 16 << 20, 9.0, "GB/s"),
                  })
                  .ok());
  st = GetStudy(s, id);
  EXPECT_EQ(st.study().state(), v1::STUDY_RUNNING);
  // One agent: one trial at a time.
  EXPECT_EQ(ListTrials(s, id).size(), 1u);

  ASSERT_TRUE(s.planner->GetRecommendation(Context().get(), rr, &rec).ok());
  EXPECT_EQ(rec.gpu_name(), "agents/cpu/Test CPU");
  // Per rank: the host's 0.2 TFLOP/s over 2 ranks; memory as registered
  // (8 GiB); copies at the memcpy rate; between agents the largest
  // allreduce; power nominal, with the spec's idle_w over it.
  EXPECT_DOUBLE_EQ(rec.gpu().peak_dense_tflops(), 0.1);
  EXPECT_EQ(rec.gpu().memory_bytes(), int64_t{8} << 30);
  EXPECT_DOUBLE_EQ(rec.gpu().hbm_gbs(), 12.5);
  EXPECT_DOUBLE_EQ(rec.gpu().nvlink_gbs(), 12.5);
  EXPECT_DOUBLE_EQ(rec.gpu().inter_node_gbs(), 4.0);
  EXPECT_DOUBLE_EQ(rec.gpu().tdp_w(), 10.0);
  EXPECT_DOUBLE_EQ(rec.gpu().idle_w(), 1.5);
  // The CPU predictions are on the CPU's scale: the best layout's step
  // takes the model FLOPs at a fraction of 0.1 TFLOP/s per rank, not
  // microseconds of an H100.
  EXPECT_GT(rec.best_throughput().predicted().step_time_s(), 1e-3);

  // The Plan RPC resolves the same GPU now.
  ASSERT_TRUE(s.planner->Plan(Context().get(), plan, &planned).ok());
  EXPECT_DOUBLE_EQ(planned.candidates(0).prediction().tokens_per_s(),
                   rec.best_throughput().predicted().tokens_per_s());
}

}  // namespace
}  // namespace tessera::service::testing
