#include "agents/command_metrics.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

// ---------------------------------------------------------------------------
// ParseMetricsJsonLines

TEST(MetricsJsonLinesTest, ReadsEveryFieldInOrder) {
  const char* text =
      "{\"step\": 1, \"step_time_s\": 2.5, \"loss\": 10.75, \"tokens\": 524288,"
      " \"peak_memory_bytes\": 81604378624}\n"
      "{\"step\": 2, \"step_time_s\": 0.25}\n"
      "{\"step_time_s\": 0.5, \"step\": 7, \"loss\": -1.5e-3, \"lr\": 3e-4,"
      " \"note\": {\"nested\": [1, 2]}}\n";
  absl::StatusOr<CommandMetrics> metrics = ParseMetricsJsonLines(text);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->source, "metrics file");
  ASSERT_EQ(metrics->steps.size(), 3u);

  const CommandStep& first = metrics->steps[0];
  EXPECT_EQ(first.step, 1);
  EXPECT_DOUBLE_EQ(first.step_time_s, 2.5);
  ASSERT_TRUE(first.loss.has_value());
  EXPECT_DOUBLE_EQ(*first.loss, 10.75);
  EXPECT_EQ(first.tokens, 524288);
  EXPECT_EQ(first.peak_memory_bytes, int64_t{81604378624});

  const CommandStep& second = metrics->steps[1];
  EXPECT_EQ(second.step, 2);
  EXPECT_DOUBLE_EQ(second.step_time_s, 0.25);
  EXPECT_FALSE(second.loss.has_value());
  EXPECT_FALSE(second.tokens.has_value());
  EXPECT_FALSE(second.peak_memory_bytes.has_value());

  EXPECT_EQ(metrics->steps[2].step, 7);
  EXPECT_DOUBLE_EQ(metrics->steps[2].step_time_s, 0.5);
  EXPECT_DOUBLE_EQ(*metrics->steps[2].loss, -1.5e-3);
}

TEST(MetricsJsonLinesTest, NullLossIsNanAndNullCountsAreAbsent) {
  absl::StatusOr<CommandMetrics> metrics = ParseMetricsJsonLines(
      "{\"step\": 0, \"step_time_s\": 1, \"loss\": null, \"tokens\": null,"
      " \"peak_memory_bytes\": null}");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_EQ(metrics->steps.size(), 1u);
  EXPECT_EQ(metrics->steps[0].step, 0);
  ASSERT_TRUE(metrics->steps[0].loss.has_value());
  EXPECT_TRUE(std::isnan(*metrics->steps[0].loss));
  EXPECT_FALSE(metrics->steps[0].tokens.has_value());
  EXPECT_FALSE(metrics->steps[0].peak_memory_bytes.has_value());
}

TEST(MetricsJsonLinesTest, IntegralFloatsAreIntegers) {
  // Python writes float(n) as "n.0"; 1e3 is also integral.
  absl::StatusOr<CommandMetrics> metrics = ParseMetricsJsonLines(
      "{\"step\": 12.0, \"step_time_s\": 1, \"tokens\": 1e3,"
      " \"peak_memory_bytes\": 8.0e10}\n");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_EQ(metrics->steps.size(), 1u);
  EXPECT_EQ(metrics->steps[0].step, 12);
  EXPECT_EQ(metrics->steps[0].tokens, 1000);
  EXPECT_EQ(metrics->steps[0].peak_memory_bytes, int64_t{80000000000});
}

TEST(MetricsJsonLinesTest, BlankLinesAndCrlfAreSkipped) {
  absl::StatusOr<CommandMetrics> metrics = ParseMetricsJsonLines(
      "\n   \n{\"step\": 1, \"step_time_s\": 1.5}\r\n\t\r\n"
      "  {\"step\": 2, \"step_time_s\": 1.25}  \n\n");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_EQ(metrics->steps.size(), 2u);
  EXPECT_EQ(metrics->steps[0].step, 1);
  EXPECT_EQ(metrics->steps[1].step, 2);
  EXPECT_DOUBLE_EQ(metrics->steps[1].step_time_s, 1.25);
}

TEST(MetricsJsonLinesTest, EmptyTextHasNoSteps) {
  for (const char* text : {"", "\n", " \n\n \r\n"}) {
    absl::StatusOr<CommandMetrics> metrics = ParseMetricsJsonLines(text);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    EXPECT_TRUE(metrics->steps.empty());
    EXPECT_EQ(metrics->source, "metrics file");
  }
}

TEST(MetricsJsonLinesTest, StepsAreKeptAsReportedEvenWhenRepeated) {
  absl::StatusOr<CommandMetrics> metrics = ParseMetricsJsonLines(
      "{\"step\": 5, \"step_time_s\": 1}\n{\"step\": 3, \"step_time_s\": 2}\n"
      "{\"step\": 5, \"step_time_s\": 3}\n");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_EQ(metrics->steps.size(), 3u);
  EXPECT_EQ(metrics->steps[0].step, 5);
  EXPECT_EQ(metrics->steps[1].step, 3);
  EXPECT_EQ(metrics->steps[2].step, 5);
  EXPECT_DOUBLE_EQ(metrics->steps[2].step_time_s, 3);
}

struct MalformedCase {
  std::string line;
  std::string expected;  // what the message says after "metrics line N: "
};

TEST(MetricsJsonLinesTest, MalformedLinesNameTheLineAndTheField) {
  const std::vector<MalformedCase> cases = {
      {"step 1 took 2s", "not JSON"},
      {"{\"step\": 1, \"step_time_s\": 1", "not JSON"},
      {"{\"step\": 1, \"step_time_s\": 1} trailing", "not JSON"},
      {"{\"step\": 1, \"step_time_s\": 1, \"loss\": NaN}", "not JSON"},
      {"{'step': 1, 'step_time_s': 1}", "not JSON"},
      {"[1, 2]", "not a JSON object"},
      {"42", "not a JSON object"},
      {"\"step\"", "not a JSON object"},
      {"null", "not a JSON object"},
      {"{\"step_time_s\": 1}", "missing \"step\""},
      {"{\"step\": 1}", "missing \"step_time_s\""},
      {"{}", "missing \"step\""},
      {"{\"step\": \"3\", \"step_time_s\": 1}", "\"step\" must be an integer"},
      {"{\"step\": -1, \"step_time_s\": 1}", "\"step\" must be an integer"},
      {"{\"step\": 1.5, \"step_time_s\": 1}", "\"step\" must be an integer"},
      {"{\"step\": true, \"step_time_s\": 1}", "\"step\" must be an integer"},
      {"{\"step\": null, \"step_time_s\": 1}", "\"step\" must be an integer"},
      {"{\"step\": 1e30, \"step_time_s\": 1}", "\"step\" must be an integer"},
      {"{\"step\": 18446744073709551615, \"step_time_s\": 1}",
       "\"step\" must be an integer >= 0, got 18446744073709551615 (too "
       "large)"},
      {"{\"step\": 1, \"step_time_s\": 0}", "\"step_time_s\" must be a number"},
      {"{\"step\": 1, \"step_time_s\": -0.5}",
       "\"step_time_s\" must be a number > 0, got -0.5"},
      {"{\"step\": 1, \"step_time_s\": \"1.0\"}",
       "\"step_time_s\" must be a number"},
      {"{\"step\": 1, \"step_time_s\": null}",
       "\"step_time_s\" must be a number"},
      // nlohmann rejects a number past double's range.
      {"{\"step\": 1, \"step_time_s\": 1e999}", "not JSON"},
      {"{\"step\": 1, \"step_time_s\": 1, \"loss\": \"nan\"}",
       "\"loss\" must be a number or null, got \"nan\""},
      {"{\"step\": 1, \"step_time_s\": 1, \"loss\": false}",
       "\"loss\" must be a number or null"},
      {"{\"step\": 1, \"step_time_s\": 1, \"tokens\": -5}",
       "\"tokens\" must be an integer >= 0, got -5"},
      {"{\"step\": 1, \"step_time_s\": 1, \"tokens\": 2.5}",
       "\"tokens\" must be an integer"},
      {"{\"step\": 1, \"step_time_s\": 1, \"tokens\": \"100\"}",
       "\"tokens\" must be an integer"},
      {"{\"step\": 1, \"step_time_s\": 1, \"peak_memory_bytes\": -1}",
       "\"peak_memory_bytes\" must be an integer >= 0"},
      {"{\"step\": 1, \"step_time_s\": 1, \"peak_memory_bytes\": [1]}",
       "\"peak_memory_bytes\" must be an integer"},
  };
  // The bad line is line 4: after a good line, a blank line, a good line.
  const std::string before =
      "{\"step\": 1, \"step_time_s\": 1}\n\n{\"step\": 2, \"step_time_s\": "
      "1}\n";
  for (const MalformedCase& c : cases) {
    SCOPED_TRACE(c.line);
    absl::StatusOr<CommandMetrics> metrics = ParseMetricsJsonLines(
        absl::StrCat(before, c.line, "\n{\"step\": 9, \"step_time_s\": 1}\n"));
    ASSERT_FALSE(metrics.ok());
    EXPECT_EQ(metrics.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(metrics.status().message());
    EXPECT_EQ(message.rfind(absl::StrCat("metrics line 4: ", c.expected), 0),
              0u)
        << message;
  }
}

TEST(MetricsJsonLinesTest, FirstMalformedLineIsTheOneNamed) {
  absl::StatusOr<CommandMetrics> metrics =
      ParseMetricsJsonLines("oops\n{\"step\": -2, \"step_time_s\": 1}\n");
  ASSERT_FALSE(metrics.ok());
  EXPECT_EQ(metrics.status().message().substr(0, 25),
            "metrics line 1: not JSON:");
}

TEST(MetricsJsonLinesTest, LongBadLinesAreShortenedInTheMessage) {
  const std::string line = absl::StrCat("not json ", std::string(500, 'x'));
  absl::StatusOr<CommandMetrics> metrics = ParseMetricsJsonLines(line);
  ASSERT_FALSE(metrics.ok());
  EXPECT_LT(metrics.status().message().size(), 120u);
  EXPECT_NE(metrics.status().message().find("..."), absl::string_view::npos);
}

// ---------------------------------------------------------------------------
// ParseFrameworkLog: torchtitan

// torchtitan/components/metrics.py (MetricsProcessor.log) with its default
// colours (torchtitan/tools/utils.py, Color), through torchtitan's logging
// formatter "[titan] %(asctime)s - %(name)s - %(levelname)s - %(message)s".
constexpr char kTitanStep1[] =
    "[titan] 2025-06-01 12:00:00,123 - root - INFO - \033[31mstep:  1  "
    "\033[32mloss: 12.25139  \033[38;2;180;60;0mgrad_norm:  4.1234  "
    "\033[38;2;54;234;195mmemory: 23.45GiB(29.65%)  \033[34mtps: 1,234  "
    "\033[36mtflops: 71.50  \033[35mmfu: 7.23%\033[39m";
constexpr char kTitanStep10[] =
    "[titan] 2025-06-01 12:00:09,456 - root - INFO - \033[31mstep: 10  "
    "\033[32mloss:      nan  \033[38;2;180;60;0mgrad_norm:     nan  "
    "\033[38;2;54;234;195mmemory: 31.50GiB(39.80%)  \033[34mtps: 12,346  "
    "\033[36mtflops: 1,171.50  \033[35mmfu: 57.23%\033[39m";

LogContext Context(int64_t tokens_per_step, int64_t world_size) {
  LogContext context;
  context.tokens_per_step = tokens_per_step;
  context.world_size = world_size;
  return context;
}

TEST(FrameworkLogTest, TorchtitanStepsWithColours) {
  const std::string log = absl::StrJoin(
      {
          "+ torchrun --nproc_per_node=8 -m torchtitan.train",
          "[titan] 2025-06-01 11:59:50,000 - root - INFO - Starting job: "
          "Llama 3 8B training",
          "[titan] 2025-06-01 11:59:55,000 - root - INFO - CUDA capacity: "
          "NVIDIA H100 80GB HBM3 with 79.10GiB memory",
          "[titan] 2025-06-01 11:59:58,000 - root - INFO - Training starts "
          "at step 1.",
          kTitanStep1,
          "[titan] 2025-06-01 12:00:05,000 - root - WARNING - 2 CUDA memory "
          "allocation retries.",
          kTitanStep10,
          "[titan] 2025-06-01 12:00:10,000 - root - INFO - \033[33mvalidate "
          "step: 10  \033[32mloss:  7.1234  \033[38;2;54;234;195mmemory: "
          "31.50GiB(39.80%)  \033[34mtps: 5,000\033[39m",
          "[titan] 2025-06-01 12:00:11,000 - root - INFO - Training completed",
      },
      "\n");
  absl::StatusOr<CommandMetrics> metrics =
      ParseFrameworkLog(log, Context(8 * 2048, 8));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->source, "torchtitan log");
  ASSERT_EQ(metrics->steps.size(), 2u);

  const CommandStep& first = metrics->steps[0];
  EXPECT_EQ(first.step, 1);
  // tps is per GPU: the job ran 1234 * 8 tokens/s.
  EXPECT_DOUBLE_EQ(first.step_time_s, 16384.0 / (1234.0 * 8.0));
  ASSERT_TRUE(first.loss.has_value());
  EXPECT_DOUBLE_EQ(*first.loss, 12.25139);
  EXPECT_EQ(first.tokens, 16384);
  EXPECT_EQ(first.peak_memory_bytes, int64_t{25179245773});  // 23.45 GiB

  const CommandStep& tenth = metrics->steps[1];
  EXPECT_EQ(tenth.step, 10);
  EXPECT_DOUBLE_EQ(tenth.step_time_s, 16384.0 / (12346.0 * 8.0));
  ASSERT_TRUE(tenth.loss.has_value());
  EXPECT_TRUE(std::isnan(*tenth.loss));
  EXPECT_EQ(tenth.peak_memory_bytes, int64_t{33822867456});  // 31.50 GiB
}

TEST(FrameworkLogTest, TorchtitanWithoutColoursBehindRankPrefixes) {
  // disable_color_printing, torchrun's "[rank0]:" prefix, CRLF.
  const std::string log =
      "[rank0]:[titan] 2025-06-01 12:00:00,123 - root - INFO - step:  2  "
      "loss:  9.87654  grad_norm:  1.0000  memory: 40.00GiB(50.57%)  "
      "tps: 987  tflops: 57.18  mfu: 5.78%\r\n"
      "[rank0]:[titan] 2025-06-01 12:00:01,123 - root - INFO - step:  3  "
      "loss:  9.50000  grad_norm:  1.0000  memory: 40.00GiB(50.57%)  "
      "tps: 1,000  tflops: 57.94  mfu: N/A\r\n";
  absl::StatusOr<CommandMetrics> metrics =
      ParseFrameworkLog(log, Context(4096, 2));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_EQ(metrics->steps.size(), 2u);
  EXPECT_EQ(metrics->steps[0].step, 2);
  EXPECT_DOUBLE_EQ(metrics->steps[0].step_time_s, 4096.0 / (987.0 * 2.0));
  EXPECT_DOUBLE_EQ(*metrics->steps[0].loss, 9.87654);
  EXPECT_EQ(metrics->steps[0].peak_memory_bytes, int64_t{40} << 30);
  EXPECT_EQ(metrics->steps[1].step, 3);
  EXPECT_DOUBLE_EQ(metrics->steps[1].step_time_s, 4096.0 / 2000.0);
}

TEST(FrameworkLogTest, TorchtitanBeforeNov2024LoggedWps) {
  // train.py before "some cleanups" (4d182a13e): wps, loss with 4 decimals.
  const std::string log =
      "[titan] 2024-06-01 12:00:00,123 - root - INFO - \033[36mstep:  1  "
      "\033[32mloss: 10.8000  \033[33mmemory:  9.36GiB(11.84%)  \033[34mwps: "
      "3,210  \033[35mmfu: 1.65%\033[39m\n";
  absl::StatusOr<CommandMetrics> metrics =
      ParseFrameworkLog(log, Context(2048, 1));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_EQ(metrics->steps.size(), 1u);
  EXPECT_DOUBLE_EQ(metrics->steps[0].step_time_s, 2048.0 / 3210.0);
  EXPECT_DOUBLE_EQ(*metrics->steps[0].loss, 10.8);
  EXPECT_EQ(metrics->steps[0].peak_memory_bytes, int64_t{10050223473});
}

TEST(FrameworkLogTest, TorchtitanStepLoggedByTwoRanksIsOneStep) {
  // Two pipeline stages, both logging (LOG_RANK=0,1): the first stage has no
  // loss and logs -1.
  const std::string log =
      "[rank0]:step:  1  loss: -1.00000  memory: 20.00GiB(25.00%)  "
      "tps: 2,000\n"
      "[rank1]:step:  1  loss: 10.00000  memory: 22.00GiB(27.50%)  "
      "tps: 1,000\n"
      "[rank0]:step:  2  loss: -2.00000  memory: 20.00GiB(25.00%)  "
      "tps: 2,000\n"
      "[rank1]:step:  2  loss:  9.00000  memory: 18.00GiB(22.50%)  "
      "tps: 2,000\n";
  absl::StatusOr<CommandMetrics> metrics =
      ParseFrameworkLog(log, Context(8000, 2));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_EQ(metrics->steps.size(), 2u);
  EXPECT_EQ(metrics->steps[0].step, 1);
  EXPECT_DOUBLE_EQ(metrics->steps[0].step_time_s, 4.0);  // the slower rank
  EXPECT_EQ(metrics->steps[0].peak_memory_bytes, int64_t{22} << 30);
  ASSERT_TRUE(metrics->steps[0].loss.has_value());
  EXPECT_DOUBLE_EQ(*metrics->steps[0].loss, 10.0);
  EXPECT_EQ(metrics->steps[1].step, 2);
  EXPECT_DOUBLE_EQ(metrics->steps[1].step_time_s, 2.0);
  EXPECT_EQ(metrics->steps[1].peak_memory_bytes, int64_t{20} << 30);
  ASSERT_TRUE(metrics->steps[1].loss.has_value());
  EXPECT_DOUBLE_EQ(*metrics->steps[1].loss, 9.0);

  // Only the first stage logging: no loss at all.
  metrics = ParseFrameworkLog(
      "step:  1  loss: -1.00000  memory: 20.00GiB(25.00%)  tps: 2,000\n",
      Context(8000, 2));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_EQ(metrics->steps.size(), 1u);
  EXPECT_FALSE(metrics->steps[0].loss.has_value());
}

TEST(FrameworkLogTest, TorchtitanMissingAllocatorStatsAreNoMemory) {
  // get_peak_stats returns -1 bytes when the allocator has no statistic.
  absl::StatusOr<CommandMetrics> metrics = ParseFrameworkLog(
      "step:  1  loss:  3.00000  memory: -0.00GiB(-0.00%)  tps: 100\n",
      Context(100, 1));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_EQ(metrics->steps.size(), 1u);
  EXPECT_FALSE(metrics->steps[0].peak_memory_bytes.has_value());
  EXPECT_DOUBLE_EQ(metrics->steps[0].step_time_s, 1.0);
}

TEST(FrameworkLogTest, TorchtitanNeedsTokensPerStepAndNonzeroTps) {
  absl::StatusOr<CommandMetrics> no_tokens =
      ParseFrameworkLog(kTitanStep1, Context(0, 8));
  ASSERT_FALSE(no_tokens.ok());
  EXPECT_EQ(no_tokens.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_tokens.status().message().find("tokens_per_step"),
            absl::string_view::npos);

  absl::StatusOr<CommandMetrics> zero_tps = ParseFrameworkLog(
      absl::StrCat(kTitanStep1, "\nstep:  2  loss:  1.00000  tps: 0\n"),
      Context(16384, 8));
  ASSERT_FALSE(zero_tps.ok());
  EXPECT_EQ(zero_tps.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(zero_tps.status().message().find("step 2 reports tps 0"),
            absl::string_view::npos)
      << zero_tps.status();
}

// ---------------------------------------------------------------------------
// ParseFrameworkLog: Megatron-LM

// megatron/training/training.py (training_log), through print_rank_last.
constexpr char kMegatronIter1[] =
    " [2025-06-01 12:00:01.123456] iteration        1/     100 | consumed "
    "samples:           64 | elapsed time per iteration (ms): 5123.4 | "
    "throughput per GPU (TFLOP/s/GPU): 123.4 | learning rate: 1.500000E-04 | "
    "global batch size:    64 | lm loss: 1.098760E+01 | loss scale: 1.0 | "
    "grad norm: 1.234 | number of skipped iterations:   0 | number of nan "
    "iterations:   0 |";
constexpr char kMegatronIter2[] =
    " [2025-06-01 12:00:02.123456] iteration        2/     100 | consumed "
    "samples:          128 | elapsed time per iteration (ms): 412.3 | "
    "throughput per GPU (TFLOP/s/GPU): 123.4 | learning rate: 1.500000E-04 | "
    "global batch size:    64 | lm loss: 9.500000E+00 | loss scale: 1.0 | "
    "grad norm: 1.234 | number of skipped iterations:   0 | number of nan "
    "iterations:   0 |";
// A NaN loss fails training_log's `avg >= 0.0`: no "lm loss" printed.
constexpr char kMegatronIter3Nan[] =
    " [2025-06-01 12:00:03.123456] iteration        3/     100 | consumed "
    "samples:          192 | elapsed time per iteration (ms): 410.0 | "
    "throughput per GPU (TFLOP/s/GPU): 123.4 | learning rate: 1.500000E-04 | "
    "global batch size:    64 | loss scale: 1.0 | grad norm: 1.234 | number "
    "of skipped iterations:   1 | number of nan iterations:   1 |";

TEST(FrameworkLogTest, MegatronIterationsAndMemoryReports) {
  const std::string log = absl::StrJoin(
      {
          "using world size: 8, data-parallel size: 2, tensor-model-parallel "
          "size: 4, pipeline-model-parallel size: 1",
          "  check_for_nan_in_loss_and_grad ................ True",
          "[after dataloaders are built] datetime: 2025-06-01 12:00:00",
          "training ...",
          kMegatronIter1,
          // megatron/training/utils/common_utils.py, report_memory, printed
          // by each data-parallel rank 0: ranks 4 and 0 here.
          "[Rank 4] (after 1 iterations) memory (MB) | allocated: 1234.50 | "
          "max allocated: 6000.50 | reserved: 6100.50 | max reserved: "
          "6200.50",
          "[Rank 0] (after 1 iterations) memory (MB) | allocated: 1234.50 | "
          "max allocated: 5678.25 | reserved: 5778.25 | max reserved: "
          "5878.25",
          kMegatronIter2,
          "[Rank 0] (after 2 iterations) memory (MB) | allocated: 1234.50 | "
          "max allocated: 7000.00 | reserved: 7100.00 | max reserved: "
          "7200.00",
          "(min, max) time across ranks (ms):",
          "    forward-backward ...............................: (400.12, "
          "401.50)",
          kMegatronIter3Nan,
          " validation loss at iteration 3 on validation set | lm loss value: "
          "9.400000E+00 | lm loss PPL: 1.210000E+04 | ",
          "[Rank 0] (before save_checkpoint for iteration 2) memory (MB) | "
          "allocated: 1.00 | max allocated: 7500.00 | reserved: 1.00 | max "
          "reserved: 1.00",
          "[Rank 0] (before save_checkpoint for iteration 100) memory (MB) | "
          "allocated: 1.00 | max allocated: 99999.00 | reserved: 1.00 | max "
          "reserved: 1.00",
      },
      "\n");
  absl::StatusOr<CommandMetrics> metrics =
      ParseFrameworkLog(log, Context(64 * 4096, 8));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->source, "megatron log");
  ASSERT_EQ(metrics->steps.size(), 3u);

  EXPECT_EQ(metrics->steps[0].step, 1);
  EXPECT_DOUBLE_EQ(metrics->steps[0].step_time_s, 5.1234);
  EXPECT_DOUBLE_EQ(*metrics->steps[0].loss, 10.9876);
  EXPECT_EQ(metrics->steps[0].tokens, 64 * 4096);
  EXPECT_EQ(metrics->steps[0].peak_memory_bytes,
            int64_t{6291980288});  // 6000.50 MiB, rank 4's

  EXPECT_EQ(metrics->steps[1].step, 2);
  EXPECT_DOUBLE_EQ(metrics->steps[1].step_time_s, 0.4123);
  EXPECT_DOUBLE_EQ(*metrics->steps[1].loss, 9.5);
  // The larger of "(after 2 iterations)" and "(before save_checkpoint for
  // iteration 2)"; nothing for iteration 100, which was not logged.
  EXPECT_EQ(metrics->steps[1].peak_memory_bytes, int64_t{7864320000});

  EXPECT_EQ(metrics->steps[2].step, 3);
  EXPECT_DOUBLE_EQ(metrics->steps[2].step_time_s, 0.41);
  ASSERT_TRUE(metrics->steps[2].loss.has_value());
  EXPECT_TRUE(std::isnan(*metrics->steps[2].loss));
  EXPECT_FALSE(metrics->steps[2].peak_memory_bytes.has_value());
}

TEST(FrameworkLogTest, MegatronWithoutLossOrTokens) {
  // No "lm loss" and no nan iterations: no loss; tokens_per_step 0: none.
  const std::string line =
      " [2025-06-01 12:00:01.123456] iteration       20/    1000 | consumed "
      "samples:         1280 | elapsed time per iteration (ms): 250.0 | "
      "global batch size:    64 | loss scale: 1.0 | number of skipped "
      "iterations:   0 | number of nan iterations:   0 |";
  absl::StatusOr<CommandMetrics> metrics =
      ParseFrameworkLog(line, Context(0, 1));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_EQ(metrics->steps.size(), 1u);
  EXPECT_EQ(metrics->steps[0].step, 20);
  EXPECT_DOUBLE_EQ(metrics->steps[0].step_time_s, 0.25);
  EXPECT_FALSE(metrics->steps[0].loss.has_value());
  EXPECT_FALSE(metrics->steps[0].tokens.has_value());
  EXPECT_FALSE(metrics->steps[0].peak_memory_bytes.has_value());
}

TEST(FrameworkLogTest, MegatronZeroElapsedTimeIsAnError) {
  absl::StatusOr<CommandMetrics> metrics = ParseFrameworkLog(
      " iteration        5/      10 | elapsed time per iteration (ms): 0.0 |",
      Context(0, 1));
  ASSERT_FALSE(metrics.ok());
  EXPECT_EQ(metrics.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(metrics.status().message().find("iteration 5"),
            absl::string_view::npos)
      << metrics.status();
}

// ---------------------------------------------------------------------------
// ParseFrameworkLog: choice, NOT_FOUND, context

TEST(FrameworkLogTest, TheFormatWithMoreStepLinesWins) {
  const std::string megatron_more =
      absl::StrJoin({kTitanStep1, kMegatronIter1, kMegatronIter2}, "\n");
  absl::StatusOr<CommandMetrics> metrics =
      ParseFrameworkLog(megatron_more, Context(16384, 8));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->source, "megatron log");
  EXPECT_EQ(metrics->steps.size(), 2u);

  const std::string tie = absl::StrJoin({kMegatronIter1, kTitanStep1}, "\n");
  metrics = ParseFrameworkLog(tie, Context(16384, 8));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->source, "torchtitan log");
  ASSERT_EQ(metrics->steps.size(), 1u);
  EXPECT_EQ(metrics->steps[0].step, 1);

  // torchtitan's missing tokens_per_step matters only when it is chosen.
  metrics = ParseFrameworkLog(megatron_more, Context(0, 8));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->source, "megatron log");
}

TEST(FrameworkLogTest, NotFoundWithoutEitherFormat) {
  const std::vector<std::string> logs = {
      "",
      "\n\n",
      "hello from my training script\nepoch 1 loss 3.2\n",
      // torchtitan's shape without a throughput.
      "step:  1  loss: 10.00000  memory: 20.00GiB(25.00%)\n",
      // Only validation lines.
      "validate step: 10  loss:  7.1234  memory: 31.50GiB(39.80%)  "
      "tps: 5,000\n",
      // Megatron's iteration without its elapsed time, and its memory report.
      " iteration        1/     100 | consumed samples:           64 |\n"
      "[Rank 0] (after 1 iterations) memory (MB) | allocated: 1.00 | max "
      "allocated: 2.00 | reserved: 3.00 | max reserved: 4.00\n",
      // Megatron's validation line.
      " validation loss at iteration 3 on validation set | lm loss value: "
      "9.400000E+00 | elapsed time per iteration (ms): 12.0 |\n",
  };
  for (const std::string& log : logs) {
    SCOPED_TRACE(log);
    absl::StatusOr<CommandMetrics> metrics =
        ParseFrameworkLog(log, Context(1024, 1));
    ASSERT_FALSE(metrics.ok());
    EXPECT_EQ(metrics.status().code(), absl::StatusCode::kNotFound);
  }
}

TEST(FrameworkLogTest, BadContextIsInvalid) {
  absl::StatusOr<CommandMetrics> metrics =
      ParseFrameworkLog(kTitanStep1, Context(16384, 0));
  ASSERT_FALSE(metrics.ok());
  EXPECT_EQ(metrics.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(metrics.status().message().find("world_size"),
            absl::string_view::npos);
  metrics = ParseFrameworkLog(kMegatronIter1, Context(-1, 8));
  ASSERT_FALSE(metrics.ok());
  EXPECT_EQ(metrics.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(metrics.status().message().find("tokens_per_step"),
            absl::string_view::npos);
}

TEST(FrameworkLogTest, CarriageReturnsEndLines) {
  // Progress redrawn with '\r' ahead of the step lines.
  const std::string log = absl::StrCat(
      "eval step: 3/10\reval step: 10/10\r", kMegatronIter2,
      "\r\neval step: 3/10\r", "step:  4  loss:  3.00000  tps: 100\r\n");
  absl::StatusOr<CommandMetrics> metrics =
      ParseFrameworkLog(log, Context(100, 1));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->source, "torchtitan log");
  ASSERT_EQ(metrics->steps.size(), 1u);
  EXPECT_EQ(metrics->steps[0].step, 4);
  EXPECT_DOUBLE_EQ(metrics->steps[0].step_time_s, 1.0);
}

// ---------------------------------------------------------------------------
// FailureStatusOfOutput

TEST(FailureStatusTest, OutOfMemoryMessages) {
  const std::vector<std::string> outputs = {
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
      "GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.23 GiB is "
      "free.",
      "[rank3]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to "
      "allocate 20.00 MiB (GPU 0; 79.15 GiB total capacity)",
      "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be "
      "asynchronously reported at some other API call",
      "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
      "`cublasCreate(handle)`",
      "gpu-node-3:1234:5678 [0] NCCL WARN Cuda failure 'out of memory'",
      "torch.distributed.DistBackendError: NCCL error in: "
      "ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with "
      "NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
      "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\n"
      "Cuda failure 'out of memory'",
      "[rank1]: RuntimeError: NCCL communicator allocation: out of memory",
      "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. "
      "DefaultCPUAllocator: can't allocate memory: you tried to allocate "
      "68719476736 bytes. Error code 12 (Cannot allocate memory)",
      "RuntimeError: CPU out of memory",
      "terminate called after throwing an instance of 'std::bad_alloc'\n"
      "  what():  std::bad_alloc\nAborted (core dumped)",
      "Traceback (most recent call last):\n  File \"train.py\", line 3, in "
      "<module>\n    x = bytearray(1 << 40)\nMemoryError",
      "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.00 GiB",
      "RuntimeError: Triton Error [CUDA]: out of memory",
      "triton.runtime.errors: CUDA_ERROR_OUT_OF_MEMORY",
      "cudaErrorMemoryAllocation: out of memory",
      "RuntimeError: MPS backend out of memory (MPS allocated: 17.00 GB)",
      "\033[31mtorch.OutOfMemoryError\033[0m: CUDA OUT OF MEMORY.",
      "[rank2]: torch.OutOfMemoryError",
  };
  for (const std::string& output : outputs) {
    SCOPED_TRACE(output);
    EXPECT_EQ(FailureStatusOfOutput(absl::StrCat("starting\n", output, "\n")),
              TrialStatus::kOom);
  }
}

TEST(FailureStatusTest, NanLossMessages) {
  const std::vector<std::string> outputs = {
      "RuntimeError: Loss is NaN at step 12",
      "ValueError: total_loss is nan",
      "AssertionError: loss is inf",
      "loss is infinite, stopping",
      "Detected NaN loss at step 7",
      "training diverged: loss became NaN",
      // megatron/core/rerun_state_machine.py validate_result, with the message
      // of megatron/core/distributed/param_and_grad_buffer.py check_grads.
      "[rank3]: RuntimeError: Rank 3, node gpu-12, device 3, iteration 42: "
      "Unexpected result nan (message='found NaN in local grad norm for "
      "bucket #0 in backward pass before data-parallel communication "
      "collective')",
      "RuntimeError: Rank 0, node n1, device 0, iteration 7: Unexpected "
      "result inf (message='found Inf in local grad norm for bucket #1 in "
      "backward pass before data-parallel communication collective')",
      // pretrain_gpt.py loss_func.
      "Unexpected result nan (message='found NaN in local forward loss "
      "calculation')",
      "AssertionError: [Megatron-FSDP](check_for_nan_in_grad=True) Detected "
      "NaN or Inf in wgrad: tensor(nan)",
      std::string(kMegatronIter3Nan),
      "RuntimeError: Function 'LogSoftmaxBackward0' returned nan values in "
      "its 0th output.",
  };
  for (const std::string& output : outputs) {
    SCOPED_TRACE(output);
    EXPECT_EQ(FailureStatusOfOutput(absl::StrCat("starting\n", output, "\n")),
              TrialStatus::kNan);
  }
}

TEST(FailureStatusTest, LookAlikesAreNeither) {
  const std::vector<std::string> outputs = {
      "", "Traceback (most recent call last):\nRuntimeError: something broke",
      "loading finance dataset from /data/finance/train.bin",
      "python /opt/tools/nan_check.py --input nan_loss.json",
      "  check_for_nan_in_loss_and_grad ................ True",
      std::string(kMegatronIter1), "banana loss function selected",
      "plots/buchanan loss curve.png written",
      "ipynb: the unfound nan in the notebook", "the loss is informative",
      "step: 10  loss:  3.14159  grad_norm: 0.5",
      // torchtitan's warnings (components/metrics.py get_peak_stats).
      "[titan] 2025-06-01 12:00:05,000 - root - WARNING - 2 CUDA OOM errors "
      "thrown.",
      "[titan] 2025-06-01 12:00:05,000 - root - WARNING - 3 CUDA memory "
      "allocation retries.",
      "[titan] 2025-06-01 11:59:55,000 - root - INFO - CUDA capacity: NVIDIA "
      "H100 80GB HBM3 with 79.10GiB memory",
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "Killed",
      "/bin/sh: line 1:  1234 Killed                  python train.py",
      "OSError: [Errno 28] No space left on device",
      "torch.distributed.DistBackendError: NCCL error: remote process exited "
      "or there was a network error",
      "Segmentation fault (core dumped)",
      "out of memory",  // no device named
  };
  for (const std::string& output : outputs) {
    SCOPED_TRACE(output);
    EXPECT_EQ(FailureStatusOfOutput(output), std::nullopt);
  }
}

TEST(FailureStatusTest, OomOutranksNan) {
  EXPECT_EQ(FailureStatusOfOutput("RuntimeError: Loss is NaN\n"
                                  "torch.OutOfMemoryError: CUDA out of "
                                  "memory.\n"),
            TrialStatus::kOom);
  EXPECT_EQ(FailureStatusOfOutput("torch.OutOfMemoryError: CUDA out of "
                                  "memory.\nRuntimeError: Loss is NaN\n"),
            TrialStatus::kOom);
}

TEST(FailureStatusTest, OnlyTheLastThousandLinesCount) {
  const std::string oom = "torch.OutOfMemoryError: CUDA out of memory.\n";
  std::string lines_999;
  for (int i = 0; i < 999; ++i) absl::StrAppend(&lines_999, "line ", i, "\n");
  EXPECT_EQ(FailureStatusOfOutput(absl::StrCat(oom, lines_999)),
            TrialStatus::kOom);
  EXPECT_EQ(FailureStatusOfOutput(absl::StrCat(oom, lines_999, "one more\n")),
            std::nullopt);
  // Without a final newline the count is the same.
  EXPECT_EQ(FailureStatusOfOutput(absl::StrCat(oom, lines_999, "one more")),
            std::nullopt);
  EXPECT_EQ(FailureStatusOfOutput(
                absl::StrCat(oom, lines_999.substr(0, lines_999.size() - 1))),
            TrialStatus::kOom);
}

}  // namespace
}  // namespace tessera::agents
