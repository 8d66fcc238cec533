// `tessera calibrate` and `--calibration`: measured runs in, a calibration
// file out (every coefficient, its prior, whether fitted, how well
// determined, the fit's errors, what it came from), used by plan and
// predict; bad input named by file, line and field, and no file written.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/measurement_file.h"
#include "core/trial_result.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "costmodel/calibration/calibration_file.h"
#include "costmodel/fit/prediction_uncertainty.h"
#include "costmodel/prediction.h"
#include "costmodel/stacks/stack_calibration.h"
#include "tests/cli/cli_test_util.h"

namespace tessera::cli {
namespace {

using json = nlohmann::json;

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/", name);
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

// A run of llama3-8b on `nodes` H100 nodes under torchtitan.
std::string SpecJson(int64_t nodes, int64_t global_batch) {
  return absl::StrFormat(
      R"({"model": {"preset": "llama3-8b"}, "cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": %d, "gpus_per_node": 8}, "training": {"global_batch": %d, "seq_len": 4096, "stack": "torchtitan"}})",
      nodes, global_batch);
}

Workload WorkloadOf(int64_t nodes, int64_t global_batch) {
  Workload w{*ModelPreset("llama3-8b"),
             MakeCluster(*GpuPreset("h100-sxm"), nodes, 8),
             TrainingConfig{.global_batch = global_batch,
                            .seq_len = 4096,
                            .stack = "torchtitan"}};
  return w;
}

// Runs "measured" as the cost model predicts them under `truth`: a GEMM
// rate 15% below the stack's default.
std::string TruthRuns() {
  costmodel::Calibration truth = *costmodel::DefaultCalibration(WorkloadOf(1, 16));
  truth.gemm_peak_efficiency = 0.68;
  truth.memory_fixed_overhead_gib = 3;
  std::string text = "# synthetic runs\n";
  const struct {
    int64_t nodes, batch;
    const char* layout;
  } runs[] = {{1, 16, "zero=3,micro_batch=2,recompute=selective"},
              {1, 16, "zero=3,micro_batch=1,recompute=full"},
              {2, 32, "tp=2,sp=1,zero=3,micro_batch=2"},
              {2, 64, "zero=3,micro_batch=2,recompute=full"},
              {4, 64, "tp=4,sp=1,zero=3,micro_batch=4"}};
  for (const auto& r : runs) {
    const Workload w = WorkloadOf(r.nodes, r.batch);
    const costmodel::LayoutEvaluation e =
        costmodel::PredictLayout(w, *ParseLayout(r.layout), truth);
    EXPECT_TRUE(e.feasible) << r.layout << ": " << e.reason;
    absl::StrAppend(
        &text,
        absl::StrFormat(
            R"({"spec": %s, "layout": "%s", "measured": {"step_time_s": %.9g, "peak_memory_gib": %.9g}})",
            SpecJson(r.nodes, r.batch), r.layout, e.prediction.step_time_s,
            e.prediction.memory_gib_per_gpu),
        "\n");
  }
  return text;
}

TEST(CalibrateCommandTest, FitsWritesAndIsUsedByPredict) {
  const std::string runs = TempPath("runs.jsonl");
  const std::string cal = TempPath("cal.json");
  Write(runs, TruthRuns());
  CliRun r = RunCli({"calibrate", "--measurements", runs, "--out", cal});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("calibration for the torchtitan stack on h100-sxm"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("5 runs, 0 skipped"), std::string::npos) << r.out;
  absl::StatusOr<costmodel::CalibrationFile> f =
      costmodel::ReadCalibrationFile(cal);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->stack, "torchtitan");
  EXPECT_EQ(f->gpu, "h100-sxm");
  EXPECT_EQ(f->samples, 5);
  EXPECT_LT(f->step_time.fitted_mape, 0.01);
  EXPECT_GT(f->step_time.prior_mape, 0.05);
  ASSERT_TRUE(f->peak_memory.has_value());
  EXPECT_LT(f->peak_memory->fitted_mape, 0.02);
  EXPECT_NEAR(f->calibration.gemm_peak_efficiency, 0.68, 0.05);
  EXPECT_EQ(f->prior.gemm_peak_efficiency, 0.80);
  // Every coefficient is in the file, with its prior and whether fitted.
  const json j = json::parse(std::ifstream(cal));
  EXPECT_EQ(j["coefficients"].size(), costmodel::Calibration::Infos().size());
  EXPECT_EQ(j["coefficients"]["gemm_peak_efficiency"]["fitted"], true);
  EXPECT_TRUE(
      j["coefficients"]["gemm_peak_efficiency"].contains("posterior_log_sd"));
  // No run measured watts: power stays at its prior, unfitted.
  EXPECT_EQ(j["coefficients"]["power_compute_activity"]["fitted"], false);
  EXPECT_EQ(j["fitted_from"][0].get<std::string>(),
            absl::StrCat(runs, ": 5 runs (0 skipped)"));
  // The printed table calls a free coefficient fitted only when the runs
  // at least halved its prior's spread; the others stayed at the default.
  EXPECT_NE(r.out.find("free coefficient"), std::string::npos) << r.out;
  ASSERT_FALSE(f->fitted.empty());
  for (const std::string& name : f->fitted) {
    const size_t at = r.out.find("\n" + name + " ");
    ASSERT_NE(at, std::string::npos) << name << "\n" << r.out;
    const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at);
    const double sd = f->posterior_log_sd.at(name);
    if (sd <= 0.5 * f->prior_log_sd) {
      EXPECT_NE(line.find("fitted by the runs"), std::string::npos) << line;
    } else {
      EXPECT_NE(line.find("default (the runs do not determine it"),
                std::string::npos)
          << line;
    }
  }
  EXPECT_NE(r.out.find("\ngemm_peak_efficiency "), std::string::npos);
  EXPECT_LE(f->posterior_log_sd.at("gemm_peak_efficiency"),
            0.5 * f->prior_log_sd);

  // predict --calibration: the file's coefficients.
  const std::vector<std::string> flags = {
      "--model",        "llama3-8b",  "--gpu",           "h100-sxm",
      "--nodes",        "2",          "--gpus-per-node", "8",
      "--global-batch", "64",         "--seq-len",       "4096",
      "--stack",        "torchtitan", "--layout",        "zero=3,micro_batch=2",
      "--json"};
  r = RunCli(Concat(Concat({"predict"}, flags), {"--calibration", cal}));
  ASSERT_EQ(r.status, 0) << r.err;
  const costmodel::LayoutEvaluation expected = costmodel::PredictLayout(
      WorkloadOf(2, 64), *ParseLayout("zero=3,micro_batch=2"), f->calibration);
  EXPECT_DOUBLE_EQ(
      json::parse(r.out)["prediction"]["step_time_s"].get<double>(),
      expected.prediction.step_time_s);
  // Another GPU: refused.
  std::vector<std::string> a100 = flags;
  a100[3] = "a100-sxm-80g";
  r = RunCli(Concat(Concat({"predict"}, a100), {"--calibration", cal}));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--calibration: " + cal +
                       " was fitted on gpu 'h100-sxm', the workload runs on "
                       "'a100-sxm-80g'"),
            std::string::npos)
      << r.err;
  // Another stack: its hardware coefficients, said on stderr.
  std::vector<std::string> mcore = flags;
  mcore[13] = "megatron-core";
  r = RunCli(Concat(Concat({"plan"}, std::vector<std::string>(mcore.begin(),
                                                              mcore.end() - 3)),
                    {"--calibration", cal, "--top", "1"}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("its hardware coefficients and measured collectives "
                       "are used with the megatron-core stack's defaults"),
            std::string::npos)
      << r.err;
  // Not with the service.
  r = RunCli(Concat(Concat({"predict"}, flags),
                    {"--calibration", cal, "--planner", "127.0.0.1:1"}));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--calibration: not with --planner"), std::string::npos);
}

TEST(CalibrateCommandTest, FitFixedCostsFitsTheHostFloor) {
  // Runs whose host takes 12 ms a layer (host_dispatch_s_per_layer): the
  // wide-tp runs at micro-batch 1 and 2 are host-bound, the others are not. Fits
  // leave the floor at the stack's 0 unless asked; asked, the fit finds it.
  const Workload w = WorkloadOf(2, 64);
  costmodel::Calibration truth = *costmodel::DefaultCalibration(w);
  truth.host_dispatch_s_per_layer = 0.012;
  std::string text;
  for (const char* layout :
       {"tp=8,sp=1,zero=2,micro_batch=1", "tp=4,sp=1,zero=2,micro_batch=1",
        "tp=8,sp=1,zero=2,micro_batch=2", "zero=3,micro_batch=2",
        "tp=2,sp=1,zero=3,micro_batch=4", "zero=3,micro_batch=1"}) {
    const costmodel::LayoutEvaluation e =
        costmodel::PredictLayout(w, *ParseLayout(layout), truth);
    ASSERT_TRUE(e.feasible) << layout << ": " << e.reason;
    absl::StrAppend(
        &text,
        absl::StrFormat(
            R"({"spec": %s, "layout": "%s", "measured": {"step_time_s": %.9g}})",
            SpecJson(2, 64), layout, e.prediction.step_time_s),
        "\n");
  }
  const std::string runs = TempPath("host_runs.jsonl");
  Write(runs, text);
  const std::string plain = TempPath("host_plain.json");
  const std::string freed = TempPath("host_freed.json");
  CliRun r = RunCli({"calibrate", "--measurements", runs, "--out", plain});
  ASSERT_EQ(r.status, 0) << r.err;
  r = RunCli({"calibrate", "--measurements", runs, "--fit-fixed-costs",
              "--out", freed});
  ASSERT_EQ(r.status, 0) << r.err;
  const costmodel::CalibrationFile a = *costmodel::ReadCalibrationFile(plain);
  const costmodel::CalibrationFile b = *costmodel::ReadCalibrationFile(freed);
  EXPECT_EQ(a.calibration.host_dispatch_s_per_layer, 0);
  EXPECT_EQ(std::count(a.fitted.begin(), a.fitted.end(),
                       "host_dispatch_s_per_layer"),
            0);
  EXPECT_EQ(std::count(b.fitted.begin(), b.fitted.end(),
                       "host_dispatch_s_per_layer"),
            1);
  EXPECT_NEAR(b.calibration.host_dispatch_s_per_layer, 0.012, 0.0012);
  EXPECT_LT(b.step_time.fitted_mape, 0.01);
  EXPECT_GT(a.step_time.fitted_mape, 2 * b.step_time.fitted_mape);
  // predict with the fit says how long the GPU waits for its host.
  const std::vector<std::string> predict = {
      "predict",   "--model",        "llama3-8b",  "--gpu",
      "h100-sxm",  "--nodes",        "2",          "--gpus-per-node",
      "8",         "--global-batch", "64",         "--seq-len",
      "4096",      "--stack",        "torchtitan", "--layout",
      "tp=8,sp=1,zero=2,micro_batch=1", "--calibration", freed};
  r = RunCli(predict);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("s waiting for the host"), std::string::npos) << r.out;
  r = RunCli(Concat(predict, {"--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(json::parse(r.out)["prediction"]["host_wait_s"].get<double>(), 0);
  // Without runs there is no fit to shape: refused, naming the flag, before
  // any file is read.
  r = RunCli({"calibrate", "--collectives",
              "all_reduce=" + TempPath("never_read.txt") + "@1", "--gpu",
              "h100-sxm", "--fit-fixed-costs"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--fit-fixed-costs: shapes the fit of measured runs; "
                       "give --measurements"),
            std::string::npos)
      << r.err;
}

// The step-time interval plan and predict print: the defaults' published
// error without a file; with a fit, narrower where the runs measured and
// wider for a layout they did not exercise (cp: its overlap coefficient kept
// the prior's spread).
TEST(CalibrateCommandTest, PredictionsCarryTheFitsUncertainty) {
  const std::string runs = TempPath("spread_runs.jsonl");
  const std::string cal = TempPath("spread_cal.json");
  Write(runs, TruthRuns());
  CliRun r = RunCli({"calibrate", "--measurements", runs, "--out", cal});
  ASSERT_EQ(r.status, 0) << r.err;
  auto predict = [&](const char* layout, bool with_file) {
    std::vector<std::string> flags = {
        "predict",  "--model",        "llama3-8b",  "--gpu",
        "h100-sxm", "--nodes",        "2",          "--gpus-per-node",
        "8",        "--global-batch", "64",         "--seq-len",
        "4096",     "--stack",        "torchtitan", "--layout",
        layout,     "--json"};
    if (with_file) flags = Concat(flags, {"--calibration", cal});
    CliRun run = RunCli(flags);
    EXPECT_EQ(run.status, 0) << run.err;
    return json::parse(run.out);
  };
  // log(high / t): the interval's log sd.
  auto log_sd = [](const json& j) {
    return std::log(j["step_time_interval_s"][1].get<double>() /
                    j["prediction"]["step_time_s"].get<double>());
  };
  const json defaults = predict("zero=3,micro_batch=2", false);
  EXPECT_NEAR(log_sd(defaults), costmodel::kDefaultModelLogSd, 1e-9);
  EXPECT_NE(defaults["uncertainty_source"].get<std::string>().find("published"),
            std::string::npos);
  const json measured = predict("zero=3,micro_batch=2", true);
  const json unmeasured = predict("cp=2,zero=3,micro_batch=1", true);
  EXPECT_NE(measured["uncertainty_source"].get<std::string>().find(
                "the fit to 5 measured runs"),
            std::string::npos)
      << measured["uncertainty_source"];
  EXPECT_LT(log_sd(measured), costmodel::kDefaultModelLogSd);
  EXPECT_GT(log_sd(unmeasured), 1.5 * log_sd(measured));
  // plan: every candidate's interval, and how many tie with the best.
  r = RunCli({"plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--nodes",
              "2", "--gpus-per-node", "8", "--global-batch", "64", "--seq-len",
              "4096", "--stack", "torchtitan", "--top", "5", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json plan = json::parse(r.out);
  ASSERT_EQ(plan["candidates"].size(), 5u);
  int64_t within = 0;
  for (const json& c : plan["candidates"]) {
    ASSERT_TRUE(c.contains("step_time_interval_s"));
    within += c["within_error_of_best"].get<bool>() ? 1 : 0;
  }
  EXPECT_EQ(plan["uncertainty"]["within_error_of_best"].get<int64_t>(), within);
  EXPECT_TRUE(plan["candidates"][0]["within_error_of_best"].get<bool>());
  EXPECT_TRUE(plan["best_throughput"].contains("step_time_interval_s"));
}

TEST(CalibrateCommandTest, BadLinesNameFileLineAndFieldAndWriteNothing) {
  const std::string cal = TempPath("never.json");
  const std::string good = absl::StrCat(
      R"({"spec": )", SpecJson(1, 16),
      R"(, "layout": "zero=3", "measured": {"step_time_s": 2.5}})");
  struct Case {
    std::string line, error;
  };
  const Case cases[] = {
      {"{not json", ":2: not a JSON object on one line"},
      {R"({"layout": "zero=3", "measured": {"step_time_s": 1}})",
       ":2: spec: required: a StudySpec object"},
      {absl::StrCat(
           R"({"spec": )", SpecJson(1, 16),
           R"(, "layout": "zero=3", "measured": {"step_time_s": -1}})"),
       ":2: measured.step_time_s: must be a positive number"},
      {absl::StrCat(R"({"spec": )", SpecJson(1, 16),
                    R"(, "layout": "zero=3", "measured": {"mfu": 0.4}})"),
       ":2: measured.mfu: unknown field"},
      {absl::StrCat(R"({"spec": )", SpecJson(1, 16),
                    R"(, "layout": "zero=3", "measured": {}})"),
       ":2: measured: needs step_time_s or tokens_per_s_per_gpu"},
      {absl::StrCat(
           R"({"spec": )", SpecJson(1, 16),
           R"(, "layout": "zero=nine", "measured": {"step_time_s": 1}})"),
       ":2: layout: layout.zero: "},
  };
  for (const Case& c : cases) {
    const std::string runs = TempPath("bad.jsonl");
    Write(runs, good + "\n" + c.line + "\n");
    const CliRun r =
        RunCli({"calibrate", "--measurements", runs, "--out", cal});
    EXPECT_EQ(r.status, 2) << c.line;
    EXPECT_NE(r.err.find(runs + c.error), std::string::npos)
        << r.err << "\n expected: " << c.error;
    EXPECT_FALSE(Exists(cal));
  }
  // Runs of two stacks: refused, naming the second's line.
  const std::string mixed = TempPath("mixed.jsonl");
  std::string other = good;
  other.replace(other.find("torchtitan"), 10, "megatron-core");
  Write(mixed, good + "\n" + other + "\n");
  const CliRun r = RunCli({"calibrate", "--measurements", mixed, "--out", cal});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(mixed +
                       ":2: spec.training.stack: this run's stack "
                       "differs from " +
                       mixed + ":1's"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(Exists(cal));
}

TEST(CalibrateCommandTest, RunsTheModelCannotExpressAreSkippedAndCounted) {
  absl::StatusOr<MeasurementFile> m = ParseMeasurements(
      absl::StrCat(
          R"({"spec": )", SpecJson(1, 16),
          R"(, "layout": "zero=3", "measured": {"tokens_per_s_per_gpu": 5000}})",
          "\n", R"({"spec": )", SpecJson(1, 16),
          R"(, "layout": "zero=1", "measured": {"step_time_s": 2}})", "\n",
          R"({"spec": )", SpecJson(1, 16),
          R"(, "layout": "tp=3", "measured": {"step_time_s": 2}})", "\n"),
      "runs.jsonl");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->samples.size(), 1u);
  // tokens/s/GPU -> step time: 16 x 4096 tokens / (5000 x 8 GPUs).
  EXPECT_DOUBLE_EQ(m->samples[0].step_time_s, 16.0 * 4096 / (5000 * 8));
  ASSERT_EQ(m->skipped.size(), 2u);
  EXPECT_EQ(m->skipped[0].line, 2);
  EXPECT_EQ(m->skipped[0].reason,
            "layout.zero: the torchtitan stack runs zero 0, 2, 3, not 1");
  EXPECT_EQ(m->skipped[1].reason.rfind("layout.tp: ", 0), 0u)
      << m->skipped[1].reason;
}

// tessera-trial's own result JSON, with the spec it ran under.
std::string TrialResultJson(const std::string& backend, int64_t ranks,
                            const std::string& status = "ok") {
  TrialResult r;
  r.status = *ParseTrialStatus(status);
  r.reason = status == "ok" ? "" : "out of memory";
  r.backend = backend;
  r.model = "llama3-8b";
  r.layout =
      *ResolveLayout(*ParseLayout("tp=2,micro_batch=1"), ranks, ranks / 2 * 4);
  r.ranks = ranks;
  r.global_batch = ranks / 2 * 4;
  r.seq_len = 2048;
  r.steps = 6;
  r.step_time_s.median = 1.5;
  r.compute_s = 1.0;
  r.comm_s = 0.4;
  r.exposed_comm_s = 0.2;
  r.peak_memory_bytes = std::vector<int64_t>(
      ranks, int64_t{30} << 30);  // per rank; the largest counts
  r.peak_memory_bytes[1] = int64_t{40} << 30;
  r.watts_per_gpu = 600;
  return TrialResultToJson(r).dump();
}

TEST(CalibrateCommandTest, TesseraTrialResultsAreMeasurementsAtTheirScale) {
  // Ran on 16 ranks (2 nodes of 8) with a global batch of 32, whatever the
  // spec's own size; the oom run is skipped.
  absl::StatusOr<MeasurementFile> m = ParseMeasurements(
      absl::StrCat(R"({"spec": )", SpecJson(4, 512), R"(, "trial": )",
                   TrialResultJson("cuda", 16), "}\n", R"({"spec": )",
                   SpecJson(4, 512), R"(, "trial": )",
                   TrialResultJson("cpu", 4), "}\n", R"({"spec": )",
                   SpecJson(4, 512), R"(, "trial": )",
                   TrialResultJson("cuda", 16, "oom"), "}\n"),
      "trials.jsonl");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->samples.size(), 2u);
  const costmodel::CalibrationSample& cuda = m->samples[0];
  EXPECT_EQ(cuda.workload.cluster.nodes, 2);
  EXPECT_EQ(cuda.workload.cluster.gpus_per_node, 8);
  EXPECT_EQ(cuda.workload.training.global_batch, 32);
  EXPECT_EQ(cuda.workload.training.seq_len, 2048);
  EXPECT_EQ(cuda.layout.tp, 2);
  EXPECT_EQ(cuda.step_time_s, 1.5);
  EXPECT_EQ(cuda.weight, 6);
  EXPECT_EQ(cuda.compute_s, 1.0);
  EXPECT_EQ(cuda.exposed_comm_s, 0.2);
  EXPECT_DOUBLE_EQ(*cuda.peak_memory_bytes, 40.0 * (1 << 30));
  EXPECT_EQ(*cuda.watts_per_gpu, 600);
  // 4 ranks, fewer than a node: one node of 4. A cpu trial's split and
  // memory are not the cost model's (the planner's own fits skip them).
  const costmodel::CalibrationSample& cpu = m->samples[1];
  EXPECT_EQ(cpu.workload.cluster.nodes, 1);
  EXPECT_EQ(cpu.workload.cluster.gpus_per_node, 4);
  EXPECT_FALSE(cpu.compute_s.has_value());
  EXPECT_FALSE(cpu.peak_memory_bytes.has_value());
  ASSERT_EQ(m->skipped.size(), 1u);
  EXPECT_EQ(m->skipped[0].line, 3);
  EXPECT_NE(m->skipped[0].reason.find("'oom'"), std::string::npos);

  // 12 ranks are not whole nodes of 8.
  absl::StatusOr<MeasurementFile> bad = ParseMeasurements(
      absl::StrCat(R"({"spec": )", SpecJson(4, 512), R"(, "trial": )",
                   TrialResultJson("cuda", 12), "}\n"),
      "t.jsonl");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("t.jsonl:1: trial.ranks"),
            std::string::npos)
      << bad.status();
}

TEST(CalibrateCommandTest, TheTrialHistoryAsPrintedIsAMeasurementFile) {
  // Two rows of `tessera trials -o json`: an ok trial with the spec it ran,
  // a failed one.
  json ok = {
      {"id", 7},
      {"state", "ok"},
      {"layout", {{"tp", 2}, {"dp", 4}, {"micro_batch", 1}, {"grad_accum", 4}}},
      {"ran", json::parse(SpecJson(1, 16))},
      {"measured",
       {{"steps", 4},
        {"step_time_median_s", 2.5},
        {"backend", "cpu"},
        {"compute_s", 2.0},
        {"peak_memory_bytes", 1 << 30},
        {"watts_per_gpu", nullptr}}}};
  json failed = {{"id", 8}, {"state", "crash"}, {"layout", ok["layout"]}};
  absl::StatusOr<MeasurementFile> m =
      ParseMeasurements(json::array({ok, failed}).dump(2), "trials.json");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->samples.size(), 1u);
  EXPECT_EQ(m->samples[0].step_time_s, 2.5);
  EXPECT_EQ(m->samples[0].weight, 4);
  EXPECT_EQ(m->samples[0].layout.dp, 4);
  EXPECT_FALSE(m->samples[0].compute_s.has_value());  // cpu
  EXPECT_FALSE(m->samples[0].watts_per_gpu.has_value());
  ASSERT_EQ(m->skipped.size(), 1u);
  EXPECT_EQ(m->skipped[0].line, 2);
  EXPECT_NE(m->skipped[0].reason.find("trial 8"), std::string::npos);
}

TEST(CalibrateCommandTest, MeasuredCollectivesReachThePlan) {
  const std::string csv = TempPath("bw.csv");
  const std::string cal = TempPath("bw.json");
  // A slow fabric: AllGather and ReduceScatter at 10 GB/s across nodes.
  Write(csv,
        "collective,nodes,gpus_per_node,bytes,busbw_gbs\n"
        "all_gather,1,8,1e8,300\nall_gather,8,8,1e8,10\n"
        "reduce_scatter,1,8,1e8,300\nreduce_scatter,8,8,1e8,10\n");
  CliRun r = RunCli({"calibrate", "--collectives", csv, "--gpu", "h100-sxm",
                     "--stack", "torchtitan", "--out", cal});
  ASSERT_EQ(r.status, 0) << r.err;
  absl::StatusOr<costmodel::CalibrationFile> f =
      costmodel::ReadCalibrationFile(cal);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_NE(f->calibration.collectives, nullptr);
  EXPECT_EQ(f->calibration.collectives->measurements().size(), 4u);
  EXPECT_EQ(f->samples, 0);
  const std::vector<std::string> flags = {"predict",
                                          "--model",
                                          "llama3-8b",
                                          "--gpu",
                                          "h100-sxm",
                                          "--nodes",
                                          "8",
                                          "--gpus-per-node",
                                          "8",
                                          "--global-batch",
                                          "64",
                                          "--seq-len",
                                          "4096",
                                          "--stack",
                                          "torchtitan",
                                          "--layout",
                                          "zero=3,micro_batch=1",
                                          "--json"};
  r = RunCli(flags);
  ASSERT_EQ(r.status, 0) << r.err;
  const double preset =
      json::parse(r.out)["prediction"]["exposed_comm_s"].get<double>();
  r = RunCli(Concat(flags, {"--calibration", cal}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(json::parse(r.out)["prediction"]["exposed_comm_s"].get<double>(),
            2 * preset + 0.1);
  // Collectives without --gpu, and a missing file.
  r = RunCli({"calibrate", "--collectives", csv});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--gpu: required with --collectives alone"),
            std::string::npos);
  r = RunCli({"calibrate", "--measurements", TempPath("none.jsonl")});
  EXPECT_NE(r.status, 0);
}

}  // namespace
}  // namespace tessera::cli
