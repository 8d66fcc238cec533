// A cluster probe's share on an agent, with the real tessera-trial: one
// agent of two ranks, and two agents of one rank meeting through the relay.
#include "agents/collective_probe_execution.h"

#include <set>
#include <thread>

#include "agents/files.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/agents/fake_planner.h"

namespace tessera::agents {
namespace {

using testing::FakePlanner;

class CollectiveProbeExecutionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir =
        MakeUniqueDirectory(::testing::TempDir(), "probe-execution-");
    ASSERT_TRUE(dir.ok());
    root_ = *dir;
    options_.agent_id = "a";
    options_.trial_binary = TESSERA_TRIAL_BINARY;
    options_.work_root = root_ + "/a";
  }
  void TearDown() override { (void)RemoveTree(root_); }

  static v1::TrialAssignment Probe(int64_t gang, int64_t ranks_per_node) {
    v1::TrialAssignment a;
    a.set_collective_probe_id(9);
    a.set_backend("cpu");
    a.set_world_size(gang * ranks_per_node);
    a.set_gang_size(gang);
    a.set_ranks_per_node(ranks_per_node);
    a.set_time_limit_s(60);
    a.set_probe_max_bytes(1 << 18);
    return a;
  }

  // The sweep's points, checked to be on `nodes` x `per_node`.
  static void ExpectSweep(const std::string& text, int64_t nodes,
                          int64_t per_node) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    ASSERT_TRUE(j.is_object()) << text;
    ASSERT_FALSE(j.contains("error")) << text;
    std::set<std::string> collectives;
    for (const nlohmann::json& p : j["collectives"]) {
      collectives.insert(p["collective"].get<std::string>());
      EXPECT_EQ(p["nodes"], nodes);
      EXPECT_EQ(p["gpus_per_node"], per_node);
      EXPECT_GT(p["busbw_gbs"].get<double>(), 0);
    }
    EXPECT_EQ(collectives.size(), 4u) << text;
  }

  std::string root_;
  TrialExecutionOptions options_;
};

TEST_F(CollectiveProbeExecutionTest, OneAgentOfTwoRanks) {
  const CollectiveProbeOutcome out =
      RunCollectiveProbeAssignment(Probe(1, 2), options_, nullptr);
  EXPECT_TRUE(out.report);
  EXPECT_TRUE(out.ok) << out.result_json;
  ExpectSweep(out.result_json, 1, 2);
}

TEST_F(CollectiveProbeExecutionTest, TwoAgentsThroughTheRelayNodeZeroReports) {
  FakePlanner planner;
  planner.Hold(-9, {"a", "b"});
  std::unique_ptr<PlannerClient> client =
      PlannerClient::Connect(planner.address(), {});
  CollectiveProbeOutcome outcomes[2];
  std::thread nodes[2];
  for (int node = 0; node < 2; ++node) {
    nodes[node] = std::thread([&, node] {
      v1::TrialAssignment a = Probe(2, 1);
      a.set_node_rank(node);
      TrialExecutionOptions o = options_;
      o.agent_id = node == 0 ? "a" : "b";
      o.work_root = root_ + "/" + o.agent_id;
      o.planner = client.get();
      outcomes[node] = RunCollectiveProbeAssignment(a, o, nullptr);
    });
  }
  for (std::thread& t : nodes) t.join();
  EXPECT_TRUE(outcomes[0].report);
  EXPECT_FALSE(outcomes[1].report);
  ExpectSweep(outcomes[0].result_json, 2, 1);
}

TEST_F(CollectiveProbeExecutionTest, NoPeerMeansAnErrorToReport) {
  // Node rank 0 of two, with no planner to relay through and no peer.
  v1::TrialAssignment a = Probe(2, 1);
  a.set_time_limit_s(2);
  const CollectiveProbeOutcome out =
      RunCollectiveProbeAssignment(a, options_, nullptr);
  EXPECT_TRUE(out.report);
  EXPECT_FALSE(out.ok);
  const nlohmann::json j = nlohmann::json::parse(out.result_json);
  ASSERT_TRUE(j.contains("error")) << out.result_json;
  EXPECT_NE(j["error"].get<std::string>().find("planner"), std::string::npos)
      << out.result_json;
}

TEST_F(CollectiveProbeExecutionTest, AShapeThatCannotRunIsAnError) {
  v1::TrialAssignment a = Probe(2, 1);
  a.set_world_size(3);
  const CollectiveProbeOutcome out =
      RunCollectiveProbeAssignment(a, options_, nullptr);
  EXPECT_NE(out.result_json.find("assignment.world_size"), std::string::npos)
      << out.result_json;
}

}  // namespace
}  // namespace tessera::agents
