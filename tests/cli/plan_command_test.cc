#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/units.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/cli_test_util.h"

namespace tessera::cli {
namespace {

using nlohmann::json;


// Relations every prediction of the example workload (256 H100, 512 x 4096
// tokens per step, 1e12 tokens) must satisfy, computed here by hand.
void ExpectConsistent(const json& candidate) {
  const json& l = candidate.at("layout");
  const json& p = candidate.at("prediction");
  for (const char* key :
       {"tp", "sp", "pp", "vpp", "cp", "dp", "zero", "shard_group",
        "micro_batch", "grad_accum", "recompute"}) {
    EXPECT_TRUE(l.contains(key)) << key;
  }
  EXPECT_EQ(l.size(), 11u);
  const int64_t mp =
      l["tp"].get<int64_t>() * l["pp"].get<int64_t>() * l["cp"].get<int64_t>();
  EXPECT_EQ(mp * l["dp"].get<int64_t>(), 256);
  EXPECT_EQ(l["micro_batch"].get<int64_t>() * l["dp"].get<int64_t>() *
                l["grad_accum"].get<int64_t>(),
            512);
  for (const char* key :
       {"step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu",
        "mfu", "memory_gib_per_gpu", "memory_breakdown", "compute_s", "comm_s",
        "exposed_comm_s", "bubble_s", "watts_per_gpu", "tokens_per_joule",
        "full_run"}) {
    EXPECT_TRUE(p.contains(key)) << key;
  }
  const double step = p["step_time_s"].get<double>();
  const double tokens_per_s = p["tokens_per_s"].get<double>();
  ASSERT_GT(step, 0);
  EXPECT_NEAR(tokens_per_s, 512.0 * 4096 / step, 1e-9 * tokens_per_s);
  EXPECT_NEAR(p["tokens_per_s_per_gpu"].get<double>() * 256, tokens_per_s,
              1e-9 * tokens_per_s);
  EXPECT_NEAR(p["mfu"].get<double>(), p["tflops_per_gpu"].get<double>() / 989.4,
              1e-9);
  const json& m = p["memory_breakdown"];
  for (const char* key :
       {"weights_bytes", "master_weights_bytes", "gradients_bytes",
        "optimizer_bytes", "activations_bytes", "gathered_params_bytes",
        "overhead_bytes", "total_bytes"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  EXPECT_NEAR(p["memory_gib_per_gpu"].get<double>(),
              m["total_bytes"].get<double>() / kGiB, 1e-6);
  EXPECT_LE(m["total_bytes"].get<double>(), 81559.0 * 1024 * 1024);
  EXPECT_LE(p["exposed_comm_s"].get<double>(),
            p["comm_s"].get<double>() + 1e-12);
  EXPECT_LE(p["exposed_comm_s"].get<double>(), step);
  // Energy per step = watts x step time x GPUs (docs/cost-model.md, "Power and energy").
  const double watts = p["watts_per_gpu"].get<double>();
  EXPECT_NEAR(p["tokens_per_joule"].get<double>(),
              512.0 * 4096 / (watts * step * 256),
              1e-9 * p["tokens_per_joule"].get<double>());
  // The full run: 1e12 tokens at tokens_per_s.
  const json& run = p["full_run"];
  const double seconds = 1e12 / tokens_per_s;
  EXPECT_NEAR(run["days"].get<double>(), seconds / 86400, 1e-9 * seconds);
  EXPECT_NEAR(run["gpu_hours"].get<double>(), seconds / 3600 * 256,
              1e-9 * seconds);
  EXPECT_NEAR(run["energy_mwh"].get<double>(), watts * 256 * seconds / 3.6e9,
              1e-9 * seconds);
}

TEST(PlanCommandTest, JsonHasEveryFieldOfTheIssue) {
  const CliRun r = RunCli(
      Concat(Concat({"plan"}, ExampleFlags()), {"--top", "5", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const json j = json::parse(r.out);
  for (const char* key : {"searched", "feasible", "elapsed_ms", "candidates",
                          "best_throughput", "best_energy", "pareto"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_GE(j["searched"].get<int64_t>(), j["scored"].get<int64_t>());
  EXPECT_GE(j["scored"].get<int64_t>(), j["feasible"].get<int64_t>());
  EXPECT_GT(j["searched"].get<int64_t>(), j["feasible"].get<int64_t>());
  EXPECT_GT(j["feasible"].get<int64_t>(), 5);
  EXPECT_GE(j["elapsed_ms"].get<double>(), 0);
  const json& candidates = j["candidates"];
  ASSERT_EQ(candidates.size(), 5u);
  for (size_t i = 0; i < candidates.size(); ++i) {
    SCOPED_TRACE(candidates[i]["layout"].dump());
    ExpectConsistent(candidates[i]);
    if (i > 0) {
      EXPECT_GE(candidates[i - 1]["prediction"]["tokens_per_s"].get<double>(),
                candidates[i]["prediction"]["tokens_per_s"].get<double>());
    }
  }
  ExpectConsistent(j["best_throughput"]);
  ExpectConsistent(j["best_energy"]);
  EXPECT_EQ(j["best_throughput"]["layout"], candidates[0]["layout"]);
  EXPECT_EQ(j["best_throughput"]["prediction"], candidates[0]["prediction"]);
  EXPECT_EQ(j["best_throughput"]["step_time_interval_s"],
            candidates[0]["step_time_interval_s"]);
  // Best energy: no candidate and no Pareto layout has more tokens/J.
  const double best_tpj =
      j["best_energy"]["prediction"]["tokens_per_joule"].get<double>();
  ASSERT_FALSE(j["pareto"].empty());
  for (const json& c : candidates) {
    EXPECT_LE(c["prediction"]["tokens_per_joule"].get<double>(), best_tpj);
  }
  // The Pareto front: by tokens/s descending, tokens/J ascending, from the
  // best-throughput to the best-energy layout.
  const json& pareto = j["pareto"];
  EXPECT_EQ(pareto.front()["layout"], j["best_throughput"]["layout"]);
  EXPECT_EQ(pareto.back()["prediction"]["tokens_per_joule"].get<double>(),
            best_tpj);
  for (size_t i = 1; i < pareto.size(); ++i) {
    EXPECT_GT(pareto[i - 1]["prediction"]["tokens_per_s"].get<double>(),
              pareto[i]["prediction"]["tokens_per_s"].get<double>());
    EXPECT_LT(pareto[i - 1]["prediction"]["tokens_per_joule"].get<double>(),
              pareto[i]["prediction"]["tokens_per_joule"].get<double>());
  }
  int64_t rejected = 0;
  for (const auto& [kind, count] : j["rejected"].items()) {
    rejected += count.get<int64_t>();
  }
  EXPECT_EQ(rejected + j["feasible"].get<int64_t>(),
            j["searched"].get<int64_t>());
}

TEST(PlanCommandTest, SpecFileGivesWhatTheFlagsGive) {
  CliRun from_file = RunCli({"plan", "--spec", ExampleSpecPath(), "--json"});
  CliRun from_flags = RunCli(
      Concat(Concat({"plan"}, ExampleFlags()), {"--top", "10", "--json"}));
  ASSERT_EQ(from_file.status, 0) << from_file.err;
  ASSERT_EQ(from_flags.status, 0) << from_flags.err;
  json a = json::parse(from_file.out);
  json b = json::parse(from_flags.out);
  a.erase("elapsed_ms");
  b.erase("elapsed_ms");
  a["scale"].erase("elapsed_ms");
  b["scale"].erase("elapsed_ms");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a["candidates"].size(), 10u);  // the file's search.top
}

TEST(PlanCommandTest, HumanTableAndBestLayouts) {
  // -o wide: every column of the candidates' table.
  const CliRun r = RunCli(
      Concat(Concat({"plan"}, ExampleFlags()), {"--top", "3", "-o", "wide"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string& out = r.out;
  EXPECT_EQ(out.rfind("llama2-7b (6.74B parameters) on 32 x 8 h100-sxm = 256 "
                      "GPUs; global batch 512 x 4096 = 2097152 tokens per "
                      "step\ntraining stack megatron-core (the default; "
                      "--stack to change), bf16\nmemory headroom: 4.0 GiB "
                      "of 79.6 GiB per GPU kept free (5%, the default; "
                      "--headroom to change)\nMFU: model FLOPs (no "
                      "recomputation) per second over h100-sxm's dense bf16 "
                      "peak, 989 TFLOP/s per GPU\nsearched ",
                      0),
            0u)
      << out;
  const size_t header = out.find("rank  tp  sp  pp  vpp  cp  ");
  ASSERT_NE(header, std::string::npos) << out;
  for (const char* column :
       {"tokens/s", "MFU", "GiB/GPU", "exposed comm s", "W/GPU", "tokens/J"}) {
    EXPECT_NE(out.find(column, header), std::string::npos) << column;
  }
  for (const char* row : {"\n   1 ", "\n   2 ", "\n   3 "}) {
    EXPECT_NE(out.find(row, header), std::string::npos) << row;
  }
  EXPECT_EQ(out.find("\n   4 ", header), std::string::npos);
  EXPECT_NE(out.find("\nbest throughput: tp="), std::string::npos);
  EXPECT_TRUE(out.find("\nbest energy: tp=") != std::string::npos ||
              out.find("\nbest energy: the same layout") != std::string::npos);
  EXPECT_NE(out.find("full run of 1e+12 tokens: "), std::string::npos);
  EXPECT_NE(out.find(" days, "), std::string::npos);
  EXPECT_NE(out.find(" MWh, "), std::string::npos);
  EXPECT_NE(out.find(" GPU-hours\n"), std::string::npos);
  EXPECT_NE(out.find("\npareto front (tokens/s against tokens/J): "),
            std::string::npos);

  // Without a token budget the full run is not guessed.
  std::vector<std::string> no_budget = ExampleFlags();
  no_budget.resize(no_budget.size() - 2);
  const CliRun r2 = RunCli(Concat({"plan"}, no_budget));
  ASSERT_EQ(r2.status, 0) << r2.err;
  EXPECT_EQ(r2.out.find("full run of"), std::string::npos);
  EXPECT_NE(r2.out.find("full run: give --total-tokens"), std::string::npos);
}

// Writes `text` to a temporary file and returns its path.
std::string TempFile(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

struct BadInput {
  std::vector<std::string> args;
  std::string expected;  // what the one error line must contain
};

TEST(PlanCommandTest, BadInputExitsTwoWithOneLineNamingTheField) {
  const std::string malformed =
      TempFile("tessera_plan_malformed.json", "{\"model\": {\"preset\": ");
  const std::string negative_top =
      TempFile("tessera_plan_negative_top.json",
               R"({"model": {"preset": "llama2-7b"},
          "cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": 1,
                      "gpus_per_node": 8},
          "training": {"global_batch": 8, "seq_len": 512},
          "search": {"top": -1}})");
  const std::string unknown_field = TempFile(
      "tessera_plan_unknown.json",
      R"({"model": {"preset": "llama2-7b"}, "cluster": {"nodez": 3}})");
  auto example_with = [](const std::string& flag, const std::string& value) {
    std::vector<std::string> args = Concat({"plan"}, ExampleFlags());
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == flag) args[i + 1] = value;
    }
    return args;
  };
  const std::vector<BadInput> cases = {
      {example_with("--model", "llama9"), "model.preset: unknown preset"},
      {example_with("--gpu", "b200"), "cluster.gpu.preset: unknown preset"},
      {example_with("--nodes", "0"), "cluster.nodes: "},
      {example_with("--gpus-per-node", "0"), "cluster.gpus_per_node: "},
      {example_with("--nodes", "abc"), "--nodes: 'abc' is not an integer"},
      {example_with("--total-tokens", "x"), "--total-tokens: 'x' is not"},
      {example_with("--seq-len", "0"), "training.seq_len: "},
      {Concat(Concat({"plan"}, ExampleFlags()), {"--nodez", "3"}),
       "--nodez: unknown flag (did you mean --nodes?)"},
      {Concat(Concat({"plan"}, ExampleFlags()), {"--top"}),
       "--top: missing value"},
      {Concat(Concat({"plan"}, ExampleFlags()), {"--top", "-1"}),
       "search.top: "},
      {Concat(Concat({"plan"}, ExampleFlags()), {"extra"}),
       "unexpected argument 'extra'"},
      {{"plan", "--spec", malformed},
       "spec: " + malformed + ": malformed JSON"},
      {{"plan", "--spec", unknown_field},
       "spec: " + unknown_field + ": unknown field 'cluster.nodez'"},
      {{"plan", "--spec", negative_top},
       "spec: " + negative_top + ": search.top: "},
      {{"plan", "--spec", "/nonexistent/study.json"},
       "spec: /nonexistent/study.json: cannot read"},
      // 1 x 3 GPUs and a model of 2 heads and 2 layers with sequences of 4
      // tokens: no tp, pp or cp of 3 (tp <= heads, pp <= layers, 2 cp <=
      // seq_len), so dp = 3, which does not divide 4 sequences.
      {{"plan",     "--layers",       "2",   "--hidden",
        "64",       "--heads",        "2",   "--ffn-hidden",
        "128",      "--vocab",        "100", "--gpu",
        "h100-sxm", "--nodes",        "1",   "--gpus-per-node",
        "3",        "--global-batch", "4",   "--seq-len",
        "4"},
       "training.global_batch: "},
      {{"frobnicate"}, "unknown command 'frobnicate'"},
  };
  for (const BadInput& c : cases) {
    std::string joined;
    for (const std::string& a : c.args) joined += a + " ";
    SCOPED_TRACE(joined);
    const CliRun r = RunCli(c.args);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
  }
  std::remove(malformed.c_str());
  std::remove(unknown_field.c_str());
  std::remove(negative_top.c_str());
  // Every missing flag at once, one line each.
  const CliRun bare = RunCli({"plan"});
  EXPECT_EQ(bare.status, 2);
  EXPECT_EQ(std::count(bare.err.begin(), bare.err.end(), '\n'), 6) << bare.err;
  for (const char* missing :
       {"tessera plan: model: required",
        "\ntessera plan: cluster.gpu: required",
        "\ntessera plan: cluster.nodes: required",
        "\ntessera plan: training.seq_len: required (--seq-len N)\n"}) {
    EXPECT_NE(bare.err.find(missing), std::string::npos) << missing;
  }
}

TEST(PlanCommandTest, TableFits100ColumnsAndCsvHasEveryCandidate) {
  const CliRun table =
      RunCli(Concat(Concat({"plan"}, ExampleFlags()), {"--top", "5"}));
  ASSERT_EQ(table.status, 0) << table.err;
  const size_t header = table.out.find("\nrank  ");
  ASSERT_NE(header, std::string::npos) << table.out;
  const size_t end = table.out.find("\n\n", header + 1);
  std::istringstream lines(table.out.substr(header + 1, end - header - 1));
  int rows = 0;
  for (std::string line; std::getline(lines, line); ++rows) {
    EXPECT_LE(line.size(), 100u) << line;
    if (line.rfind("every row: ", 0) == 0) --rows;  // not a row
  }
  EXPECT_EQ(rows, 6);  // the header and five layouts
  const CliRun csv = RunCli(
      Concat(Concat({"plan"}, ExampleFlags()), {"--top", "5", "-o", "csv"}));
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("rank,tp,sp,pp,vpp,cp,dp,zero,shard_group,"
                          "micro_batch,grad_accum,recompute,step_time_s,",
                          0),
            0u)
      << csv.out;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 6);
  EXPECT_NE(csv.out.find("\n1,"), std::string::npos);
  EXPECT_NE(csv.out.find("\n5,"), std::string::npos);
  // --json and -o json are one format; they may not disagree.
  const CliRun both =
      RunCli(Concat(Concat({"plan"}, ExampleFlags()), {"--json", "-o", "csv"}));
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("--json: conflicts with --output csv"),
            std::string::npos)
      << both.err;
}

// `tessera plan` with the example's flags, each of `changes` replacing the
// example's value of its flag or added.
std::vector<std::string> PlanWith(
    const std::vector<std::pair<std::string, std::string>>& changes) {
  std::vector<std::string> args = Concat({"plan"}, ExampleFlags());
  for (const auto& [flag, value] : changes) {
    auto at = std::find(args.begin(), args.end(), flag);
    if (at != args.end()) {
      *(at + 1) = value;
    } else {
      args.push_back(flag);
      args.push_back(value);
    }
  }
  return args;
}

TEST(PlanCommandTest, NamesAreFoundWhateverTheirCaseAndNearOnesSuggested) {
  auto example_with = [](const std::string& flag, const std::string& value) {
    std::vector<std::string> args = Concat({"plan"}, ExampleFlags());
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == flag) args[i + 1] = value;
    }
    return Concat(args, {"--top", "1"});
  };
  CliRun r = RunCli(PlanWith({{"--model", "Llama2-7B"},
                              {"--gpu", "H100-SXM"},
                              {"--stack", "TorchTitan"},
                              {"--top", "1"}}));
  ASSERT_EQ(r.status, 0) << r.err;
  // The names as the presets and stacks spell them.
  EXPECT_EQ(r.out.rfind("llama2-7b (6.74B parameters) on 32 x 8 h100-sxm", 0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("\ntraining stack torchtitan,"), std::string::npos)
      << r.out;
  const std::vector<BadInput> cases = {
      {example_with("--gpu", "h100"),
       "cluster.gpu.preset: unknown preset 'h100' (did you mean h100-sxm or "
       "h100-sxm-96g-500w? known: "},
      {example_with("--model", "lama2-7b"),
       "model.preset: unknown preset 'lama2-7b' (did you mean llama2-7b? "},
      {Concat(example_with("--top", "1"), {"--stack", "megatron"}),
       "training.stack: unknown stack 'megatron' (did you mean "},
  };
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.expected);
    r = RunCli(c.args);
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
  }
  r = RunCli(Concat(example_with("--top", "1"), {"--stack", "megatron"}));
  EXPECT_NE(r.err.find("megatron-core"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("megatron-2021"), std::string::npos) << r.err;
}

TEST(PlanCommandTest, ExportToAnotherStackRanksForItAndSaysSo) {
  const std::vector<std::string> fsdp =
      Concat(Concat({"plan"}, ExampleFlags()), {"--stack", "pytorch-fsdp"});
  CliRun r = RunCli(Concat(fsdp, {"--export", "megatron"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("note: --export megatron runs the megatron-core "
                       "stack, not pytorch-fsdp: ranked again for "
                       "megatron-core"),
            std::string::npos)
      << r.err;
  // What was exported is megatron-core's own best, as its own plan says.
  const CliRun own =
      RunCli(Concat(Concat({"plan"}, ExampleFlags()),
                    {"--stack", "megatron-core", "--export", "megatron"}));
  ASSERT_EQ(own.status, 0) << own.err;
  EXPECT_EQ(r.out, own.out);
  EXPECT_EQ(own.err.find("ranked again"), std::string::npos) << own.err;
  EXPECT_NE(r.out.find("megatron-core stack"), std::string::npos) << r.out;
}

TEST(PlanCommandTest, TableShowsEveryKnobAndNamesItsColumns) {
  // Fitting 100 columns, each knob is a column or, the same in every row,
  // on the line under the table: rows never look identical where their
  // layouts differ. The communication column says it is the exposed part.
  for (const std::vector<std::string>& args :
       {PlanWith({{"--top", "5"}}), PlanWith({{"--top", "8"},
                                              {"--model", "llama3-8b"},
                                              {"--nodes", "1"},
                                              {"--global-batch", "64"},
                                              {"--stack", "torchtitan"}})}) {
    const CliRun r = RunCli(args);
    ASSERT_EQ(r.status, 0) << r.err;
    const size_t header = r.out.find("\nrank  ");
    ASSERT_NE(header, std::string::npos) << r.out;
    const size_t end = r.out.find("\n\n", header + 1);
    const std::string table = r.out.substr(header + 1, end - header);
    std::istringstream lines(table);
    std::string titles;
    std::getline(lines, titles);
    const std::string titled = " " + titles + " ";
    const size_t every = table.find("every row: ");
    const std::string same =
        every == std::string::npos ? "" : table.substr(every);
    for (const std::string knob : {"tp", "sp", "pp", "vpp", "cp", "dp", "zero",
                                   "shard", "mb", "ga", "recompute"}) {
      const bool column =
          titled.find(" " + knob + " ") != std::string::npos ||
          (knob == "recompute" && titled.find(" recomp ") != std::string::npos);
      const bool said = same.find(knob + "=") != std::string::npos;
      EXPECT_TRUE(column != said) << knob << "\n" << table;
    }
    // Rows differ in what is shown left of the step time.
    std::vector<std::string> rows;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("every row", 0) == 0) break;
      // The knobs: after the rank, before the step time.
      std::string knobs = line.substr(0, titles.find("step s"));
      knobs = knobs.substr(knobs.find_first_not_of(' '));
      rows.push_back(knobs.substr(knobs.find(' ')));
    }
    std::sort(rows.begin(), rows.end());
    EXPECT_EQ(std::adjacent_find(rows.begin(), rows.end()), rows.end())
        << table;
    EXPECT_NE(titles.find("exposed"), std::string::npos) << titles;
    EXPECT_EQ(titles.find("comm s"), std::string::npos) << titles;
  }
  // fp8: MFU over the fp8 peak beside the bf16 one (h100-sxm: 1978.9 and
  // 989.4 TFLOP/s, so the first is half the second).
  const CliRun fp8 =
      RunCli(Concat(Concat({"plan"}, ExampleFlags()),
                    {"--top", "1", "--precision", "fp8", "-o", "wide"}));
  ASSERT_EQ(fp8.status, 0) << fp8.err;
  EXPECT_NE(fp8.out.find("MFU fp8  MFU bf16"), std::string::npos) << fp8.out;
  const size_t best = fp8.out.find("\nbest throughput: ");
  ASSERT_NE(best, std::string::npos);
  double fp8_mfu = 0, bf16_mfu = 0;
  const std::string line = fp8.out.substr(fp8.out.find("MFU ", best));
  ASSERT_EQ(std::sscanf(line.c_str(),
                        "MFU %lf%% of the fp8 peak, %lf%% of the bf16 peak",
                        &fp8_mfu, &bf16_mfu),
            2)
      << line;
  EXPECT_NEAR(fp8_mfu, bf16_mfu * 989.4 / 1978.9, 0.06);
}

TEST(PlanCommandTest, NothingFeasibleExitsThree) {
  // 405B parameters cannot fit on one 40 GB GPU under any layout.
  const CliRun r = RunCli({"plan", "--model", "llama3-405b", "--gpu",
                           "a100-sxm-40g", "--nodes", "1", "--gpus-per-node",
                           "1", "--global-batch", "1", "--seq-len", "4096"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("no feasible layout"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rejected: memory "), std::string::npos) << r.out;
  const CliRun j =
      RunCli({"plan", "--model", "llama3-405b", "--gpu", "a100-sxm-40g",
              "--nodes", "1", "--gpus-per-node", "1", "--global-batch", "1",
              "--seq-len", "4096", "--json"});
  EXPECT_EQ(j.status, 3);
  const json parsed = json::parse(j.out);
  EXPECT_EQ(parsed["feasible"], 0);
  EXPECT_TRUE(parsed["best_throughput"].is_null());
  EXPECT_TRUE(parsed["candidates"].empty());
  EXPECT_GT(parsed["rejected"]["memory"].get<int64_t>(), 0);
}

TEST(PlanCommandTest, HelpDocumentsFlagsAndExitCodes) {
  CliRun r = RunCli({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("  plan "), std::string::npos);
  EXPECT_NE(r.out.find("  predict "), std::string::npos);
  EXPECT_NE(r.out.find("Exit status:"), std::string::npos);
  r = RunCli({});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("Usage: tessera <command>"), std::string::npos);
  r = RunCli({"plan", "--help"});
  EXPECT_EQ(r.status, 0);
  for (const char* flag : {"--spec FILE",
                           "--model NAME",
                           "--layers N",
                           "--hidden N",
                           "--heads N",
                           "--kv-heads N",
                           "--ffn-hidden N",
                           "--vocab N",
                           "--mlp KIND",
                           "--tie-embeddings",
                           "--gpu NAME",
                           "--nodes N",
                           "--gpus-per-node N",
                           "--intra-node-gbs",
                           "--inter-node-gbs",
                           "--inter-node-latency-us",
                           "--global-batch N",
                           "--seq-len N",
                           "--total-tokens N",
                           "--top N",
                           "--objective time|energy|gpu-hours",
                           "--deadline DAYS",
                           "--charge-idle",
                           "--node-counts ladder|all|cluster|N,N,...",
                           "--json",
                           "Exit status:",
                           "  3  plan: no layout is feasible"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
  r = RunCli({"help", "predict"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--layout LAYOUT"), std::string::npos);
  EXPECT_NE(r.out.find("Exit status:"), std::string::npos);
}

// llama3-70b on 256 x 8 H100 under torchtitan, 512 x 8192 tokens per step
// and 1e12 tokens: on all 2048 GPUs communication stops hiding, so the
// least energy uses part of the cluster.
std::vector<std::string> ScaleFlags() {
  return {"plan",        "--model",          "llama3-70b", "--gpu",
          "h100-sxm",    "--nodes",          "256",        "--gpus-per-node",
          "8",           "--global-batch",   "512",        "--seq-len",
          "8192",        "--stack",          "torchtitan", "--total-tokens",
          "1e12"};
}

TEST(PlanCommandTest, GpuCountSearchedWithObjectiveAndDeadline) {
  const CliRun r =
      RunCli(Concat(ScaleFlags(), {"--deadline", "30", "--top", "3", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  const json& scale = j.at("scale");
  EXPECT_EQ(scale["objective"], "energy");  // a deadline's default
  EXPECT_EQ(scale["deadline_days"], 30);
  EXPECT_EQ(scale["charge_idle_gpus"], false);
  EXPECT_EQ(scale["cluster_gpus"], 2048);
  EXPECT_EQ(scale["counts"].size(), 16u);  // the ladder of 256 nodes
  EXPECT_TRUE(scale["meets_deadline"].get<bool>());
  const json& chosen = scale["chosen"];
  const int64_t gpus = chosen["gpus"].get<int64_t>();
  EXPECT_LT(gpus, 2048);
  EXPECT_LE(chosen["full_run"]["days"].get<double>(), 30);
  // The least energy among the front's points that meet the deadline.
  ASSERT_GE(scale["front"].size(), 3u);
  for (const json& p : scale["front"]) {
    if (p["full_run"]["days"].get<double>() > 30) continue;
    EXPECT_GE(p["full_run"]["energy_mwh"].get<double>(),
              chosen["full_run"]["energy_mwh"].get<double>());
  }
  // The candidates are the chosen count's, with the global batch kept.
  for (const json& c : j["candidates"]) {
    const json& l = c["layout"];
    EXPECT_EQ(l["tp"].get<int64_t>() * l["pp"].get<int64_t>() *
                  l["cp"].get<int64_t>() * l["dp"].get<int64_t>(),
              gpus);
    EXPECT_EQ(l["micro_batch"].get<int64_t>() * l["dp"].get<int64_t>() *
                  l["grad_accum"].get<int64_t>(),
              512);
  }
  ASSERT_FALSE(scale["marginal"].empty());
  EXPECT_EQ(scale["marginal"][0]["more_gpus"], 2048);
  EXPECT_EQ(scale["marginal"][0]["text"].get<std::string>().rfind(
                "the last 1,024 GPUs (2,048 rather than 1,024) shorten the "
                "run by ",
                0),
            0u)
      << scale["marginal"][0]["text"];

  // The table says the same in words.
  const CliRun t = RunCli(Concat(ScaleFlags(), {"--deadline", "30"}));
  ASSERT_EQ(t.status, 0) << t.err;
  for (const char* text :
       {"\nGPU count: 16 whole-node counts of the cluster's 2,048 GPUs",
        "objective: energy, deadline 30 days\n",
        "\npareto front of time against energy and GPU-hours across counts: ",
        "\nthe last 1,024 GPUs (2,048 rather than 1,024) shorten the run by ",
        "\nwhy fewer GPUs use less energy: ",
        "\nchosen for energy within the deadline of 30 days: ",
        "GPUs this run leaves free are not charged to it (they can run other "
        "work); --charge-idle charges their idle power (70 W each: "}) {
    EXPECT_NE(t.out.find(text), std::string::npos) << text << "\n" << t.out;
  }

  // Charged: the idle GPUs' energy is in every point but the whole
  // cluster's.
  const CliRun c = RunCli(
      Concat(ScaleFlags(), {"--deadline", "30", "--charge-idle", "--json"}));
  ASSERT_EQ(c.status, 0) << c.err;
  const json cj = json::parse(c.out)["scale"];
  EXPECT_TRUE(cj["charge_idle_gpus"].get<bool>());
  for (const json& p : cj["front"]) {
    EXPECT_EQ(p["idle_joules_per_token"].get<double>() > 0,
              p["gpus"].get<int64_t>() < 2048)
        << p["gpus"];
  }
  EXPECT_GT(cj["chosen"]["full_run"]["energy_mwh"].get<double>(),
            chosen["full_run"]["energy_mwh"].get<double>());
}

TEST(PlanCommandTest, UnmetDeadlineAndCountChoices) {
  // One day is too short for any count: the fastest, flagged.
  CliRun r = RunCli(Concat(ScaleFlags(), {"--deadline", "1", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  json scale = json::parse(r.out)["scale"];
  EXPECT_FALSE(scale["meets_deadline"].get<bool>());
  EXPECT_EQ(scale["chosen"], scale["front"][0]);
  r = RunCli(Concat(ScaleFlags(), {"--deadline", "1"}));
  EXPECT_NE(r.out.find("; no count meets the deadline of 1 days, this is the "
                       "fastest: "),
            std::string::npos)
      << r.out;
  // GPU-hours, and a list of counts.
  r = RunCli(Concat(ScaleFlags(), {"--objective", "gpu-hours", "--node-counts",
                                   "16,64,256", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  scale = json::parse(r.out)["scale"];
  EXPECT_EQ(scale["objective"], "gpu-hours");
  ASSERT_EQ(scale["counts"].size(), 3u);
  EXPECT_EQ(scale["counts"][0]["gpus"], 128);
  EXPECT_EQ(scale["counts"][2]["gpus"], 2048);
  for (const json& p : scale["front"]) {
    EXPECT_GE(p["gpu_seconds_per_token"].get<double>(),
              scale["chosen"]["gpu_seconds_per_token"].get<double>());
  }
  // The whole cluster only: what plan did before the count was searched.
  r = RunCli(Concat(ScaleFlags(), {"--node-counts", "cluster", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  scale = json::parse(r.out)["scale"];
  ASSERT_EQ(scale["counts"].size(), 1u);
  EXPECT_EQ(scale["chosen"]["gpus"], 2048);
}

TEST(PlanCommandTest, BadScaleFlagsExitTwoNamingTheField) {
  std::vector<std::string> no_budget = ScaleFlags();
  no_budget.resize(no_budget.size() - 2);
  const std::vector<BadInput> cases = {
      {Concat(no_budget, {"--deadline", "3"}),
       "search.scale.deadline_days: a deadline needs the token budget"},
      {Concat(ScaleFlags(), {"--deadline", "-2"}),
       "--deadline: must be positive days"},
      {Concat(ScaleFlags(), {"--objective", "watts"}),
       "search.scale.objective: 'watts' is not one of time, energy, "
       "gpu-hours"},
      {Concat(ScaleFlags(), {"--node-counts", "0"}),
       "--node-counts: '0' is not ladder, all, cluster or a node count in "
       "1..256"},
      {Concat(ScaleFlags(), {"--node-counts", "8,300"}),
       "--node-counts: '300' is not"},
  };
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.expected);
    const CliRun r = RunCli(c.args);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace tessera::cli
