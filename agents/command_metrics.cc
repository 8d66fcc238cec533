#include "agents/command_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace tessera::agents {
namespace {

constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;
constexpr double kBytesPerMib = 1024.0 * 1024.0;
constexpr int64_t kFailureTailLines = 1000;
constexpr size_t kExcerptBytes = 60;

// ---------------------------------------------------------------------------
// Text helpers.

bool IsWordChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

// The first place at or after `from` where `needle` occurs in `haystack`
// with no word character right before it (when `word_before`) and none right
// after it (when `word_after`); npos when there is none.
size_t FindPhrase(absl::string_view haystack, absl::string_view needle,
                  size_t from = 0, bool word_before = true,
                  bool word_after = true) {
  for (size_t pos = haystack.find(needle, from); pos != absl::string_view::npos;
       pos = haystack.find(needle, pos + 1)) {
    const size_t end = pos + needle.size();
    const bool before_ok =
        !word_before || pos == 0 || !IsWordChar(haystack[pos - 1]);
    const bool after_ok =
        !word_after || end == haystack.size() || !IsWordChar(haystack[end]);
    if (before_ok && after_ok) return pos;
  }
  return absl::string_view::npos;
}

bool HasPhrase(absl::string_view haystack, absl::string_view needle) {
  return FindPhrase(haystack, needle) != absl::string_view::npos;
}

// `text` without ANSI escape sequences: CSI ("\033[31m",
// "\033[38;2;54;234;195m"), OSC (ended by BEL or ESC \) and two-byte ones.
std::string StripAnsi(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '\033') {
      out.push_back(text[i++]);
      continue;
    }
    ++i;  // ESC
    if (i >= text.size()) break;
    if (text[i] == '[') {
      ++i;
      // Parameter and intermediate bytes, then one final byte.
      while (i < text.size() && (text[i] < 0x40 || text[i] > 0x7e) &&
             text[i] >= 0x20) {
        ++i;
      }
      if (i < text.size() && text[i] >= 0x40 && text[i] <= 0x7e) ++i;
    } else if (text[i] == ']') {
      ++i;
      while (i < text.size() && text[i] != '\a' && text[i] != '\033') ++i;
      if (i < text.size() && text[i] == '\a') {
        ++i;
      } else if (i + 1 < text.size() && text[i + 1] == '\\') {
        i += 2;
      }
    } else {
      ++i;
    }
  }
  return out;
}

// The non-empty lines of a log; '\r' ends a line too (progress bars).
std::vector<absl::string_view> LogLines(absl::string_view text) {
  return absl::StrSplit(text, absl::ByAnyChar("\r\n"), absl::SkipEmpty());
}

// The token after the first `key` (a whole word) in `line`: spaces skipped,
// then up to the next whitespace or '|'. nullopt when `key` is not there.
std::optional<absl::string_view> ValueAfter(absl::string_view line,
                                            absl::string_view key) {
  const size_t pos = FindPhrase(line, key, 0, /*word_before=*/true,
                                /*word_after=*/false);
  if (pos == absl::string_view::npos) return std::nullopt;
  size_t begin = pos + key.size();
  while (begin < line.size() && (line[begin] == ' ' || line[begin] == '\t')) {
    ++begin;
  }
  size_t end = begin;
  while (end < line.size() && !absl::ascii_isspace(line[end]) &&
         line[end] != '|') {
    ++end;
  }
  return line.substr(begin, end - begin);
}

std::optional<int64_t> IntegerAfter(absl::string_view line,
                                    absl::string_view key) {
  std::optional<absl::string_view> token = ValueAfter(line, key);
  int64_t value = 0;
  if (!token.has_value() || !absl::SimpleAtoi(*token, &value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> NumberAfter(absl::string_view line,
                                  absl::string_view key) {
  std::optional<absl::string_view> token = ValueAfter(line, key);
  double value = 0;
  if (!token.has_value() || token->empty() ||
      !absl::SimpleAtod(*token, &value)) {
    return std::nullopt;
  }
  return value;
}

// Reads decimal digits at `*pos` of `text` into `*value`, advancing `*pos`;
// false when there are none.
bool ConsumeDigits(absl::string_view text, size_t* pos, int64_t* value) {
  const size_t begin = *pos;
  while (*pos < text.size() && absl::ascii_isdigit(text[*pos])) ++*pos;
  return *pos > begin &&
         absl::SimpleAtoi(text.substr(begin, *pos - begin), value);
}

void SkipSpaces(absl::string_view text, size_t* pos) {
  while (*pos < text.size() && text[*pos] == ' ') ++*pos;
}

std::string Excerpt(absl::string_view text) {
  if (text.size() <= kExcerptBytes) return std::string(text);
  return absl::StrCat(text.substr(0, kExcerptBytes), "...");
}

// ---------------------------------------------------------------------------
// The metrics file.

std::string JsonExcerpt(const nlohmann::json& value) {
  return Excerpt(
      value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

absl::Status LineError(int64_t line_number, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("metrics line ", line_number, ": ", message));
}

// An integer >= 0: a JSON integer, or a number with an integral value
// (12.0, as Python writes a float).
absl::StatusOr<int64_t> NonNegativeInteger(const nlohmann::json& object,
                                           const char* key,
                                           int64_t line_number) {
  const nlohmann::json& value = object.at(key);
  const std::string wrong = absl::StrCat(
      "\"", key, "\" must be an integer >= 0, got ", JsonExcerpt(value));
  int64_t result = 0;
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return LineError(line_number, absl::StrCat(wrong, " (too large)"));
    }
    result = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    result = value.get<int64_t>();
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    // 2^63 is the first double past int64's range.
    if (!std::isfinite(d) || d != std::trunc(d) || d >= 9223372036854775808.0 ||
        d < -9223372036854775808.0) {
      return LineError(line_number, wrong);
    }
    result = static_cast<int64_t>(d);
  } else {
    return LineError(line_number, wrong);
  }
  if (result < 0) return LineError(line_number, wrong);
  return result;
}

// An optional integer field: absent or null gives nullopt.
absl::StatusOr<std::optional<int64_t>> OptionalInteger(
    const nlohmann::json& object, const char* key, int64_t line_number) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  TESSERA_ASSIGN_OR_RETURN(int64_t value,
                           NonNegativeInteger(object, key, line_number));
  return value;
}

absl::StatusOr<CommandStep> StepOfLine(absl::string_view line,
                                       int64_t line_number) {
  nlohmann::json object = nlohmann::json::parse(line, nullptr, false);
  if (object.is_discarded()) {
    return LineError(line_number, absl::StrCat("not JSON: ", Excerpt(line)));
  }
  if (!object.is_object()) {
    return LineError(line_number,
                     absl::StrCat("not a JSON object: ", Excerpt(line)));
  }
  for (const char* key : {"step", "step_time_s"}) {
    if (!object.contains(key)) {
      return LineError(line_number, absl::StrCat("missing \"", key, "\""));
    }
  }
  CommandStep step;
  TESSERA_ASSIGN_OR_RETURN(step.step,
                           NonNegativeInteger(object, "step", line_number));
  const nlohmann::json& time = object.at("step_time_s");
  if (!time.is_number() || !std::isfinite(time.get<double>()) ||
      time.get<double>() <= 0) {
    return LineError(line_number,
                     absl::StrCat("\"step_time_s\" must be a number > 0, got ",
                                  JsonExcerpt(time)));
  }
  step.step_time_s = time.get<double>();
  if (auto loss = object.find("loss"); loss != object.end()) {
    if (loss->is_null()) {
      step.loss = std::numeric_limits<double>::quiet_NaN();
    } else if (loss->is_number()) {
      step.loss = loss->get<double>();
    } else {
      return LineError(line_number,
                       absl::StrCat("\"loss\" must be a number or null, got ",
                                    JsonExcerpt(*loss)));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(step.tokens,
                           OptionalInteger(object, "tokens", line_number));
  TESSERA_ASSIGN_OR_RETURN(
      step.peak_memory_bytes,
      OptionalInteger(object, "peak_memory_bytes", line_number));
  return step;
}

// ---------------------------------------------------------------------------
// Framework logs.

// Steps by number, a step logged again (by another rank) merged into its
// first place.
class StepList {
 public:
  void Add(const CommandStep& step) {
    auto [it, inserted] = index_.emplace(step.step, steps_.size());
    if (inserted) {
      steps_.push_back(step);
      return;
    }
    CommandStep& first = steps_[it->second];
    first.step_time_s = std::max(first.step_time_s, step.step_time_s);
    if (!first.loss.has_value()) first.loss = step.loss;
    if (!first.tokens.has_value()) first.tokens = step.tokens;
    if (step.peak_memory_bytes.has_value()) {
      first.peak_memory_bytes = std::max(first.peak_memory_bytes.value_or(0),
                                         *step.peak_memory_bytes);
    }
  }
  std::vector<CommandStep>& steps() { return steps_; }

 private:
  std::vector<CommandStep> steps_;
  std::map<int64_t, size_t> index_;
};

std::optional<int64_t> KnownTokens(const LogContext& context) {
  if (context.tokens_per_step > 0) return context.tokens_per_step;
  return std::nullopt;
}

// torchtitan/components/metrics.py, MetricsProcessor.log:
//   logger.info(
//       f"{color.red}step: {step:2}  "
//       f"{color.green}loss: {global_avg_loss:8.5f}  "
//       f"{color.orange}grad_norm: {grad_norm:7.4f}  "
//       f"{color.turquoise}memory: {device_mem_stats.max_reserved_gib:5.2f}GiB"
//       f"({device_mem_stats.max_reserved_pct:.2f}%)  "
//       f"{color.blue}tps: {round(tps):,}  "
//       f"{color.cyan}tflops: {tflops:,.2f}  "
//       f"{color.magenta}mfu: {mfu_str}{color.reset}"
//   )
// where
//   # tokens per second per device, abbreviated as tps
//   tps = self.ntokens_since_last_log / (
//       time_delta * self.parallel_dims.non_data_parallel_size
//   )
// ntokens_since_last_log adds labels.numel() of each local batch
// (torchtitan/trainer.py, batch_generator): a data-parallel rank's tokens
// since the last log, shared by its cp * tp * pp ranks, so tps * world_size
// is the job's tokens per second over the log interval. Before Nov 2024
// (train.py) the same quantity was logged as "wps: {round(wps):,}" after
// "loss: {global_avg_loss:7.4f}". MetricsProcessor.log_validation's
// "validate step: ..." lines are not training steps.
//
// nullopt for a line of another kind; an error for a step line that gives
// no step time.
std::optional<absl::StatusOr<CommandStep>> TorchtitanStep(
    absl::string_view line, const LogContext& context) {
  if (absl::StrContains(line, "validate step:")) return std::nullopt;
  std::optional<int64_t> step = IntegerAfter(line, "step:");
  if (!step.has_value()) return std::nullopt;
  std::optional<absl::string_view> tps_text = ValueAfter(line, "tps:");
  if (!tps_text.has_value()) tps_text = ValueAfter(line, "wps:");
  int64_t tps = 0;
  if (!tps_text.has_value() ||
      !absl::SimpleAtoi(absl::StrReplaceAll(*tps_text, {{",", ""}}), &tps) ||
      tps < 0) {
    return std::nullopt;
  }
  if (context.tokens_per_step <= 0) {
    return absl::InvalidArgumentError(
        "torchtitan log: tokens_per_step (global batch * sequence length) "
        "must be known to turn tps into step times");
  }
  if (tps == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "torchtitan log: step ", *step,
        " reports tps 0 (under 0.5 tokens/s per GPU); its step time is "
        "unknown"));
  }
  CommandStep out;
  out.step = *step;
  out.step_time_s =
      static_cast<double>(context.tokens_per_step) /
      (static_cast<double>(tps) * static_cast<double>(context.world_size));
  // Pipeline stages without the loss log -1 per microbatch
  // (torchtitan/trainer.py: `return torch.tensor([-1.0], ...)`).
  out.loss = NumberAfter(line, "loss:");
  if (out.loss.has_value() && *out.loss < 0) out.loss = std::nullopt;
  out.tokens = KnownTokens(context);
  if (std::optional<absl::string_view> memory = ValueAfter(line, "memory:")) {
    const size_t gib = memory->find("GiB");
    double value = 0;
    // A missing allocator statistic is logged as -1 bytes ("-0.00GiB").
    if (gib != absl::string_view::npos &&
        absl::SimpleAtod(memory->substr(0, gib), &value) &&
        std::isfinite(value) && value >= 0 && !std::signbit(value)) {
      out.peak_memory_bytes = std::llround(value * kBytesPerGib);
    }
  }
  return out;
}

// The N of Megatron's " iteration {:8d}/{:8d} |" (N/ M, spaces before
// each number).
std::optional<int64_t> MegatronIteration(absl::string_view line) {
  for (size_t pos = FindPhrase(line, "iteration");
       pos != absl::string_view::npos;
       pos = FindPhrase(line, "iteration", pos + 1)) {
    size_t i = pos + absl::string_view("iteration").size();
    int64_t iteration = 0;
    int64_t total = 0;
    SkipSpaces(line, &i);
    if (!ConsumeDigits(line, &i, &iteration)) continue;
    if (i >= line.size() || line[i] != '/') continue;
    ++i;
    SkipSpaces(line, &i);
    if (ConsumeDigits(line, &i, &total)) return iteration;
  }
  return std::nullopt;
}

// megatron/training/training.py, training_log:
//   log_string += ' iteration {:8d}/{:8d} |'.format(iteration,
//                                                   args.train_iters)
//   log_string += ' elapsed time per iteration (ms): {:.1f} |'.format(
//       elapsed_time_per_iteration * 1000.0)
//   ...
//   if avg >= 0.0:
//       log_string += ' {}: {:.6E} |'.format(key, avg)     # "lm loss"
//   ...
//   log_string += ' number of nan iterations: {:3d} |'.format(
//       total_loss_dict[nan_iters_key])
//   print_rank_last(log_string)
// elapsed_time_per_iteration = elapsed_time / total_iterations, the mean
// over the log interval. A NaN average fails `avg >= 0.0`: no loss printed.
// nullopt for a line of another kind; an error for an iteration line that
// gives no step time.
std::optional<absl::StatusOr<CommandStep>> MegatronStep(
    absl::string_view line, const LogContext& context) {
  std::optional<int64_t> iteration = MegatronIteration(line);
  if (!iteration.has_value()) return std::nullopt;
  std::optional<double> elapsed_ms =
      NumberAfter(line, "elapsed time per iteration (ms):");
  if (!elapsed_ms.has_value()) return std::nullopt;
  if (!std::isfinite(*elapsed_ms) || *elapsed_ms <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "megatron log: iteration ", *iteration,
        " reports an elapsed time per iteration of ", *elapsed_ms, " ms"));
  }
  CommandStep out;
  out.step = *iteration;
  out.step_time_s = *elapsed_ms / 1000.0;
  out.loss = NumberAfter(line, "lm loss:");
  std::optional<int64_t> nan_iterations =
      IntegerAfter(line, "number of nan iterations:");
  if (!out.loss.has_value() && nan_iterations.value_or(0) > 0) {
    out.loss = std::numeric_limits<double>::quiet_NaN();
  }
  out.tokens = KnownTokens(context);
  return out;
}

// megatron/training/utils/common_utils.py (megatron/training/utils.py in
// older releases), report_memory:
//   string = name + ' memory (MB)'
//   string += f" | allocated: {torch.cuda.memory_allocated() / mega_bytes:.2f}"
//   string += f" | max allocated: "
//             f"{torch.cuda.max_memory_allocated() / mega_bytes:.2f}"
//   ...
//   print("[Rank {}] {}".format(torch.distributed.get_rank(), string))
// with name f'(after {iteration} iterations)' from training_log, or
// f"(before save_checkpoint for iteration {iteration})". The iteration and
// the max allocated bytes of such a line.
std::optional<std::pair<int64_t, int64_t>> MegatronMemory(
    absl::string_view line) {
  if (!absl::StrContains(line, "memory (MB)")) return std::nullopt;
  std::optional<double> mib = NumberAfter(line, "max allocated:");
  if (!mib.has_value() || !std::isfinite(*mib) || *mib < 0) {
    return std::nullopt;
  }
  int64_t iteration = 0;
  bool found = false;
  for (size_t pos = FindPhrase(line, "after"); pos != absl::string_view::npos;
       pos = FindPhrase(line, "after", pos + 1)) {
    size_t i = pos + absl::string_view("after").size();
    SkipSpaces(line, &i);
    if (!ConsumeDigits(line, &i, &iteration)) continue;
    SkipSpaces(line, &i);
    if (absl::StartsWith(line.substr(i), "iteration")) {
      found = true;
      break;
    }
  }
  if (!found) {
    for (size_t pos = FindPhrase(line, "for iteration");
         pos != absl::string_view::npos && !found;
         pos = FindPhrase(line, "for iteration", pos + 1)) {
      size_t i = pos + absl::string_view("for iteration").size();
      SkipSpaces(line, &i);
      found = ConsumeDigits(line, &i, &iteration);
    }
  }
  if (!found) return std::nullopt;
  return std::make_pair(iteration, std::llround(*mib * kBytesPerMib));
}

// What one parser made of a log's lines: a step (or why not) per line of its
// format.
using ParsedLines = std::vector<absl::StatusOr<CommandStep>>;

template <typename Parse>
ParsedLines ParseLines(const std::vector<absl::string_view>& lines,
                       Parse parse) {
  ParsedLines parsed;
  for (absl::string_view line : lines) {
    if (std::optional<absl::StatusOr<CommandStep>> step = parse(line)) {
      parsed.push_back(*std::move(step));
    }
  }
  return parsed;
}

// The steps of `parsed` merged by number; its first error if any.
absl::StatusOr<std::vector<CommandStep>> MergedSteps(
    const ParsedLines& parsed) {
  StepList steps;
  for (const absl::StatusOr<CommandStep>& step : parsed) {
    if (!step.ok()) return step.status();
    steps.Add(*step);
  }
  return std::move(steps.steps());
}

// ---------------------------------------------------------------------------
// Failure kinds.

// The last `count` lines of `text`.
absl::string_view LastLines(absl::string_view text, int64_t count) {
  size_t begin = text.size();
  // A final newline does not start another line.
  if (begin > 0 && text[begin - 1] == '\n') --begin;
  for (int64_t i = 0; i < count; ++i) {
    const size_t newline = text.rfind('\n', begin == 0 ? 0 : begin - 1);
    if (begin == 0 || newline == absl::string_view::npos) return text;
    begin = newline;
  }
  return text.substr(begin + 1);
}

// `line` is lower case.
bool IsOomLine(absl::string_view line) {
  if (absl::StrContains(line, "out of memory")) {
    for (absl::string_view device :
         {"cuda", "nccl", "hip", "cpu", "gpu", "mps", "xpu"}) {
      if (HasPhrase(line, device)) return true;
    }
  }
  for (absl::string_view phrase :
       {"outofmemoryerror", "cublas_status_alloc_failed",
        "cuda_error_out_of_memory", "cudaerrormemoryallocation",
        "can't allocate memory", "std::bad_alloc"}) {
    if (absl::StrContains(line, phrase)) return true;
  }
  return HasPhrase(line, "memoryerror");
}

// `line` is lower case.
bool IsNanLine(absl::string_view line) {
  // "loss is nan" may end a longer name ("total_loss is nan").
  for (absl::string_view phrase :
       {"loss is nan", "loss is inf", "loss is infinite"}) {
    if (FindPhrase(line, phrase, 0, /*word_before=*/false,
                   /*word_after=*/true) != absl::string_view::npos) {
      return true;
    }
  }
  // Megatron: "found NaN in local grad norm for bucket #{i} ..."
  // (megatron/core/distributed/param_and_grad_buffer.py), "found NaN in
  // local forward loss calculation" (pretrain_gpt.py), "Detected NaN or Inf
  // in wgrad" (Megatron-FSDP); autograd's anomaly mode: "Function
  // 'MulBackward0' returned nan values in its 0th output."
  for (absl::string_view phrase :
       {"nan loss", "inf loss", "loss became nan", "found nan in",
        "found inf in", "detected nan or inf in", "returned nan values"}) {
    if (HasPhrase(line, phrase)) return true;
  }
  std::optional<int64_t> nan_iterations =
      IntegerAfter(line, "number of nan iterations:");
  return nan_iterations.value_or(0) > 0;
}

}  // namespace

absl::StatusOr<CommandMetrics> ParseMetricsJsonLines(absl::string_view text) {
  CommandMetrics metrics;
  metrics.source = "metrics file";
  int64_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    TESSERA_ASSIGN_OR_RETURN(CommandStep step, StepOfLine(line, line_number));
    metrics.steps.push_back(step);
  }
  return metrics;
}

absl::StatusOr<CommandMetrics> ParseFrameworkLog(absl::string_view log,
                                                 const LogContext& context) {
  if (context.world_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "world_size must be at least 1, got ", context.world_size));
  }
  if (context.tokens_per_step < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tokens_per_step must be >= 0, got ", context.tokens_per_step));
  }
  const std::string text = StripAnsi(log);
  const std::vector<absl::string_view> lines = LogLines(text);

  const ParsedLines torchtitan =
      ParseLines(lines, [&context](absl::string_view line) {
        return TorchtitanStep(line, context);
      });
  const ParsedLines megatron =
      ParseLines(lines, [&context](absl::string_view line) {
        return MegatronStep(line, context);
      });
  CommandMetrics metrics;
  if (!torchtitan.empty() && torchtitan.size() >= megatron.size()) {
    metrics.source = "torchtitan log";
    TESSERA_ASSIGN_OR_RETURN(metrics.steps, MergedSteps(torchtitan));
    return metrics;
  }
  if (megatron.empty()) {
    return absl::NotFoundError(
        "no torchtitan step lines (\"step: N  loss: ...  tps: N\") or "
        "Megatron-LM iteration lines (\"iteration N/ M | ... elapsed time "
        "per iteration (ms): X |\") in the command's output");
  }
  metrics.source = "megatron log";
  TESSERA_ASSIGN_OR_RETURN(metrics.steps, MergedSteps(megatron));
  std::map<int64_t, int64_t> peak_bytes_by_iteration;
  for (absl::string_view line : lines) {
    if (auto memory = MegatronMemory(line)) {
      int64_t& peak = peak_bytes_by_iteration[memory->first];
      peak = std::max(peak, memory->second);
    }
  }
  for (CommandStep& step : metrics.steps) {
    auto it = peak_bytes_by_iteration.find(step.step);
    if (it != peak_bytes_by_iteration.end()) {
      step.peak_memory_bytes = it->second;
    }
  }
  return metrics;
}

std::optional<TrialStatus> FailureStatusOfOutput(absl::string_view output) {
  const std::string tail =
      absl::AsciiStrToLower(StripAnsi(LastLines(output, kFailureTailLines)));
  const std::vector<absl::string_view> lines = LogLines(tail);
  for (absl::string_view line : lines) {
    if (IsOomLine(line)) return TrialStatus::kOom;
  }
  for (absl::string_view line : lines) {
    if (IsNanLine(line)) return TrialStatus::kNan;
  }
  return std::nullopt;
}

}  // namespace tessera::agents
