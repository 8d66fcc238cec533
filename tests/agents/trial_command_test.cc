#include "agents/trial_command.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/layout.h"
#include "gtest/gtest.h"
#include "proto/convert.h"

namespace tessera::agents {
namespace {

// The value after `flag` in argv; nullopt when the flag is absent.
std::optional<std::string> FlagValue(const std::vector<std::string>& argv,
                                     const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  if (it == argv.end() || it + 1 == argv.end()) return std::nullopt;
  return *(it + 1);
}

v1::TrialAssignment TinyAssignment() {
  v1::TrialAssignment a;
  a.set_trial_id(17);
  a.set_study_id(3);
  a.mutable_model()->set_preset("tiny");
  a.mutable_layout()->set_tp(2);
  a.mutable_layout()->set_micro_batch(2);
  a.set_global_batch(8);
  a.set_seq_len(32);
  a.set_warmup_steps(1);
  a.set_steps(3);
  a.set_backend("cpu");
  a.set_world_size(4);
  a.set_gang_size(1);
  a.set_node_rank(0);
  a.set_ranks_per_node(4);
  a.set_time_limit_s(120);
  a.set_seed(99);
  return a;
}

TrialLaunchOptions Options() {
  TrialLaunchOptions o;
  o.trial_binary = "/opt/tessera/bin/tessera-trial";
  o.work_dir = "/work/trial-17";
  o.advertise_host = "10.0.0.5";
  return o;
}

TEST(TrialCommandTest, ThreadsModeIsOneProcess) {
  absl::StatusOr<TrialLaunch> launch =
      BuildTrialLaunch(AssignedTrialOf(TinyAssignment()), Options());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_FALSE(launch->per_rank);
  EXPECT_FALSE(launch->relay_rendezvous);
  EXPECT_EQ(launch->rendezvous_file, "");
  ASSERT_EQ(launch->processes.size(), 1u);
  const RankProcess& p = launch->processes[0];
  const std::vector<std::string>& argv = p.spec.argv;
  EXPECT_EQ(argv[0], "/opt/tessera/bin/tessera-trial");
  EXPECT_EQ(FlagValue(argv, "--ranks"), "4");
  EXPECT_EQ(FlagValue(argv, "--backend"), "cpu");
  EXPECT_EQ(FlagValue(argv, "--model"), "tiny");
  EXPECT_EQ(FlagValue(argv, "--global-batch"), "8");
  EXPECT_EQ(FlagValue(argv, "--seq-len"), "32");
  EXPECT_EQ(FlagValue(argv, "--warmup"), "1");
  EXPECT_EQ(FlagValue(argv, "--steps"), "3");
  EXPECT_EQ(FlagValue(argv, "--seed"), "99");
  EXPECT_EQ(FlagValue(argv, "--time-limit-s"), "120");
  EXPECT_EQ(FlagValue(argv, "--json"), "/work/trial-17/trial.json");
  EXPECT_EQ(p.json_path, "/work/trial-17/trial.json");
  EXPECT_EQ(p.spec.stderr_path, "/work/trial-17/trial.err");
  EXPECT_EQ(p.spec.working_dir, "/work/trial-17");
  // Flags that take defaults are left out.
  EXPECT_EQ(FlagValue(argv, "--memory-limit"), std::nullopt);
  EXPECT_EQ(FlagValue(argv, "--rank"), std::nullopt);
  EXPECT_EQ(FlagValue(argv, "--rendezvous-file"), std::nullopt);
  EXPECT_EQ(FlagValue(argv, "--layers"), std::nullopt);
}

TEST(TrialCommandTest, PerRankModeAcrossAgents) {
  v1::TrialAssignment a = TinyAssignment();
  a.set_gang_size(2);
  a.set_node_rank(1);
  a.set_ranks_per_node(2);
  a.set_world_size(4);
  a.set_memory_limit_bytes(1 << 30);
  absl::StatusOr<TrialLaunch> launch =
      BuildTrialLaunch(AssignedTrialOf(a), Options());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_TRUE(launch->per_rank);
  EXPECT_TRUE(launch->relay_rendezvous);
  EXPECT_FALSE(launch->publishes_rendezvous);  // node rank 1
  EXPECT_EQ(launch->rendezvous_file, "/work/trial-17/rendezvous");
  ASSERT_EQ(launch->processes.size(), 2u);
  for (int64_t local = 0; local < 2; ++local) {
    const RankProcess& p = launch->processes[local];
    const std::vector<std::string>& argv = p.spec.argv;
    EXPECT_EQ(p.local_rank, local);
    EXPECT_EQ(p.global_rank, 2 + local);  // node_rank * ranks_per_node + local
    EXPECT_EQ(FlagValue(argv, "--rank"), std::to_string(2 + local));
    EXPECT_EQ(FlagValue(argv, "--ranks"), "4");  // the world
    EXPECT_EQ(FlagValue(argv, "--ranks-per-host"), "2");
    EXPECT_EQ(FlagValue(argv, "--rendezvous-file"),
              "/work/trial-17/rendezvous");
    EXPECT_EQ(FlagValue(argv, "--bind-host"), "0.0.0.0");
    EXPECT_EQ(FlagValue(argv, "--advertise-host"), "10.0.0.5");
    EXPECT_EQ(FlagValue(argv, "--memory-limit"), std::to_string(1 << 30));
    EXPECT_EQ(p.json_path,
              "/work/trial-17/rank-" + std::to_string(2 + local) + ".json");
  }
  a.set_node_rank(0);
  launch = BuildTrialLaunch(AssignedTrialOf(a), Options());
  ASSERT_TRUE(launch.ok());
  EXPECT_TRUE(launch->publishes_rendezvous);
  EXPECT_EQ(FlagValue(launch->processes[1].spec.argv, "--rank"), "1");
}

TEST(TrialCommandTest, CudaIsOneProcessPerGpuEvenOnOneAgent) {
  v1::TrialAssignment a = TinyAssignment();
  a.set_backend("cuda");
  absl::StatusOr<TrialLaunch> launch =
      BuildTrialLaunch(AssignedTrialOf(a), Options());
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_TRUE(launch->per_rank);
  EXPECT_FALSE(launch->relay_rendezvous);  // every rank is here
  ASSERT_EQ(launch->processes.size(), 4u);
  EXPECT_EQ(FlagValue(launch->processes[3].spec.argv, "--rank"), "3");
  EXPECT_EQ(FlagValue(launch->processes[3].spec.argv, "--backend"), "cuda");
  EXPECT_EQ(FlagValue(launch->processes[3].spec.argv, "--bind-host"),
            std::nullopt);
}

TEST(TrialCommandTest, LayoutTextRoundTripsThroughParseLayout) {
  std::vector<v1::Layout> layouts(4);
  layouts[0].set_tp(2);
  layouts[0].set_sp(true);
  layouts[0].set_recompute("selective");
  layouts[1].set_pp(2);
  layouts[1].set_vpp(2);
  layouts[1].set_zero(1);
  layouts[1].set_grad_accum(4);
  layouts[2].set_cp(2);
  layouts[2].set_zero(3);
  layouts[2].set_shard_group(2);
  layouts[2].set_dp(4);
  layouts[2].set_recompute("full");
  // layouts[3]: every field at its default.
  for (const v1::Layout& proto : layouts) {
    v1::TrialAssignment a = TinyAssignment();
    *a.mutable_layout() = proto;
    absl::StatusOr<TrialLaunch> launch =
        BuildTrialLaunch(AssignedTrialOf(a), Options());
    ASSERT_TRUE(launch.ok()) << launch.status();
    std::optional<std::string> text =
        FlagValue(launch->processes[0].spec.argv, "--layout");
    ASSERT_TRUE(text.has_value());
    absl::StatusOr<Layout> parsed = ParseLayout(*text);
    ASSERT_TRUE(parsed.ok()) << parsed.status() << " " << *text;
    absl::StatusOr<Layout> expected = LayoutFromProto(proto);
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(*parsed, *expected) << *text;
  }
}

TEST(TrialCommandTest, ModelFieldsBecomeFlags) {
  v1::ModelSpec m;
  m.set_preset("llama3-8b");
  m.set_layers(2);
  m.set_kv_heads(8);
  m.set_mlp("swiglu");
  absl::StatusOr<std::vector<std::string>> flags = ModelFlags(m);
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(*flags,
            (std::vector<std::string>{"--model", "llama3-8b", "--layers", "2",
                                      "--kv-heads", "8", "--mlp", "swiglu"}));
  v1::ModelSpec custom;
  custom.set_layers(2);
  custom.set_hidden(64);
  custom.set_heads(4);
  custom.set_ffn_hidden(128);
  custom.set_vocab(256);
  flags = ModelFlags(custom);
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(*flags, (std::vector<std::string>{"--layers", "2", "--hidden", "64",
                                              "--heads", "4", "--ffn-hidden",
                                              "128", "--vocab", "256"}));
}

TEST(TrialCommandTest, WhatCannotRunNamesTheField) {
  const auto error = [](const v1::TrialAssignment& a) {
    absl::StatusOr<TrialLaunch> launch =
        BuildTrialLaunch(AssignedTrialOf(a), Options());
    EXPECT_FALSE(launch.ok());
    EXPECT_EQ(launch.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(launch.status().message());
  };
  v1::TrialAssignment a = TinyAssignment();
  a.set_world_size(6);
  EXPECT_EQ(error(a).rfind("assignment.world_size: ", 0), 0u) << error(a);
  a = TinyAssignment();
  a.set_node_rank(1);
  EXPECT_EQ(error(a).rfind("assignment.node_rank: ", 0), 0u);
  a = TinyAssignment();
  a.set_ranks_per_node(0);
  EXPECT_EQ(error(a).rfind("assignment.ranks_per_node: ", 0), 0u);
  a = TinyAssignment();
  a.set_backend("tpu");
  EXPECT_EQ(error(a).rfind("assignment.backend: ", 0), 0u);
  a = TinyAssignment();
  a.mutable_layout()->set_zero(5);
  EXPECT_EQ(error(a).rfind("layout.zero: ", 0), 0u);
  a = TinyAssignment();
  a.mutable_model()->set_rope_theta(5e5);
  EXPECT_EQ(error(a).rfind("model.rope_theta: ", 0), 0u);
  a = TinyAssignment();
  a.mutable_model()->set_tie_embeddings(true);
  EXPECT_EQ(error(a).rfind("model.tie_embeddings: ", 0), 0u);
}

TEST(TrialCommandTest, UnsetShapeFieldsTakeOneAgent) {
  v1::TrialAssignment a = TinyAssignment();
  a.clear_gang_size();
  a.clear_world_size();
  a.clear_backend();
  TrialLaunchOptions o = Options();
  o.default_backend = "cpu";
  absl::StatusOr<TrialLaunch> launch = BuildTrialLaunch(AssignedTrialOf(a), o);
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_FALSE(launch->per_rank);
  EXPECT_EQ(FlagValue(launch->processes[0].spec.argv, "--ranks"), "4");
  EXPECT_EQ(FlagValue(launch->processes[0].spec.argv, "--backend"), "cpu");
}

}  // namespace
}  // namespace tessera::agents
