#include "costmodel/published/published_runs.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/units.h"
#include "nlohmann/json.hpp"
#include "costmodel/resolved_workload.h"
#include "costmodel/stacks/stack_calibration.h"
#include "costmodel/published/rank_correlation.h"

namespace tessera::costmodel {
namespace {

using Json = nlohmann::json;


// Source of a row, by its "source" text.
std::string SourceOf(const std::string& s) {
  if (absl::StrContains(s, "torchtitan")) return "torchtitan";
  if (absl::StrContains(s, "cases_april2021")) return "megatron-lm-a100-2021";
  if (absl::StrContains(s, "Megatron-LM")) return "megatron-lm-h100";
  if (absl::StrContains(s, "Megatron-Bridge")) return "megatron-bridge";
  if (absl::StrContains(s, "performance_long_sequence")) {
    return "nemo-long-sequence";
  }
  if (absl::StrContains(s,
                        "NeMo docs/source/performance/performance_summary")) {
    return "nemo-24.07";
  }
  if (absl::StrContains(s, "llm-foundry")) return "llm-foundry";
  if (absl::StrContains(s, "fms-fsdp")) return "fms-fsdp";
  return "";
}

// The training stack each source ran.
std::string StackOf(const std::string& source) {
  if (source == "torchtitan") return "torchtitan";
  if (source == "megatron-lm-h100" || source == "megatron-bridge" ||
      source == "nemo-long-sequence" || source == "nemo-24.07") {
    return "megatron-core";
  }
  if (source == "megatron-lm-a100-2021") return "megatron-2021";
  return "pytorch-fsdp";  // llm-foundry (Composer) and fms-fsdp: FSDP1
}

std::optional<std::string> GpuPresetOf(const std::string& gpu) {
  if (absl::StrContains(gpu, "96GB") || absl::StrContains(gpu, "95GB")) {
    return "h100-sxm-96g-500w";
  }
  if (absl::StartsWith(gpu, "H200")) return "h200-sxm";
  if (absl::StartsWith(gpu, "H100")) return "h100-sxm";
  if (absl::StartsWith(gpu, "A100-40GB")) return "a100-sxm-40g";
  if (absl::StartsWith(gpu, "A100")) return "a100-sxm-80g";
  return std::nullopt;
}

std::optional<int64_t> Int(const Json& row, const char* key) {
  if (!row.contains(key) || row[key].is_null()) return std::nullopt;
  return row[key].get<int64_t>();
}

std::string Text(const Json& row, const char* key) {
  if (!row.contains(key) || row[key].is_null()) return "";
  return row[key].get<std::string>();
}

// Narayanan et al. SC'21, Table 1 (weak scaling on A100): heads, tp and pp of
// each GPT model by hidden size; the README table this row comes from gives
// only tp*pp, which these match for every row.
struct Sc21Model {
  int64_t hidden, heads, tp, pp;
};
constexpr Sc21Model kSc21Table1[] = {
    {2304, 24, 1, 1},   {3072, 32, 2, 1},   {4096, 32, 4, 1},
    {6144, 48, 8, 1},   {8192, 64, 8, 2},   {10240, 80, 8, 4},
    {12288, 96, 8, 8},  {16384, 128, 8, 16}, {20480, 128, 8, 35},
    {25600, 160, 8, 64}};

// Megatron's FLOPs per token for a GPT layer stack (ffn 4h): 72 (no
// recomputation) or 96 (with the recomputed forward) * l * h^2 * (1 + s/(6h)
// + V/(12 l h) or V/(16 l h)) (Narayanan et al. SC'21, Section 5.1).
double MegatronFlopsPerToken(const ModelConfig& m, int64_t seq_len,
                             bool with_recompute) {
  const double l = static_cast<double>(m.layers);
  const double h = static_cast<double>(m.hidden);
  const double v = static_cast<double>(m.vocab);
  const double s = static_cast<double>(seq_len);
  return with_recompute ? 96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))
                        : 72 * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
}

bool IsFp8(const std::string& p) {
  return absl::StrContains(p, "fp8") || absl::StrContains(p, "float8");
}

// The assumption a row that does not give its recomputation records.
std::string UnstatedRecomputeAssumption(Recompute r) {
  return absl::StrCat("recompute ", RecomputeName(r), " (not given)");
}

// What the parts of MapRow share: the row, the run it fills and its
// notes; Assume records what the row did not say, in the order met.
struct RowMapping {
  const Json& row;
  PublishedRun& run;
  std::string notes;
  void Assume(std::string what) { run.assumptions.push_back(std::move(what)); }
};

// The SC'21 split of a megatron-lm-a100-2021 row (zero: not such a row).
struct Sc21Split {
  int64_t tp = 0, pp = 0;
};

// The row's model: its architecture, GPT's MLP and tied embeddings for MPT
// and Megatron GPT rows, SC'21's heads for megatron-lm-a100-2021 rows.
absl::StatusOr<ModelConfig> RowModel(RowMapping& m, Sc21Split* sc21) {
  const Json& row = m.row;
  ModelConfig model;
  model.name = m.run.model;
  const std::optional<int64_t> layers = Int(row, "layers");
  const std::optional<int64_t> hidden = Int(row, "hidden");
  const std::optional<int64_t> vocab = Int(row, "vocab");
  if (!layers || !hidden || !vocab) {
    return absl::InvalidArgumentError(
        "the architecture (layers, hidden, vocab) is not given");
  }
  model.layers = *layers;
  model.hidden = *hidden;
  model.vocab = *vocab;
  const bool gpt = absl::StartsWith(m.run.model, "mpt") ||
                   absl::StartsWith(m.run.model, "megatron-gpt");
  model.mlp = gpt ? MlpKind::kGelu : MlpKind::kSwiGlu;
  model.tie_embeddings = gpt;
  std::optional<int64_t> heads = Int(row, "heads");
  if (m.run.source == "megatron-lm-a100-2021") {
    for (const Sc21Model& s : kSc21Table1) {
      if (s.hidden == model.hidden) {
        heads = s.heads;
        sc21->tp = s.tp;
        sc21->pp = s.pp;
      }
    }
    if (!heads) return absl::InvalidArgumentError("not in SC'21 Table 1");
    m.Assume("heads, tp and pp from SC'21 Table 1 (the README gives tp*pp)");
  }
  if (!heads) return absl::InvalidArgumentError("heads not given");
  model.heads = *heads;
  model.kv_heads = Int(row, "kv_heads").value_or(model.heads);
  if (!Int(row, "ffn")) {
    model.ffn_hidden = 4 * model.hidden;
    m.Assume("GPT MLP of 4h (ffn not given)");
  } else {
    model.ffn_hidden = *Int(row, "ffn");
  }
  TESSERA_RETURN_IF_ERROR(ValidateModel(model));
  return model;
}

// The row's cluster (no memory headroom: these layouts ran), with its GPUs
// and GPUs per node.
absl::StatusOr<ClusterConfig> RowCluster(RowMapping& m, int64_t* gpus,
                                         int64_t* per_node) {
  const std::optional<std::string> preset = GpuPresetOf(Text(m.row, "gpu"));
  if (!preset) return absl::InvalidArgumentError("unknown GPU");
  const GpuSpec gpu = *GpuPreset(*preset);
  *gpus = *Int(m.row, "gpus");
  *per_node = Int(m.row, "gpus_per_node").value_or(0);
  if (*per_node == 0) {
    *per_node = 8;
    m.Assume("8 GPUs per node (not given)");
  }
  const int64_t nodes = std::max<int64_t>(1, *gpus / *per_node);
  ClusterConfig cluster = MakeCluster(gpu, nodes, std::min(*per_node, *gpus));
  // These layouts ran: the question is whether the model fits them in the
  // device's memory at all, not within a planning margin.
  cluster.memory_headroom_fraction = 0;
  if (m.run.source == "fms-fsdp") {
    // "A100 80GB x 128 (400 Gbps)", "H100 x 96 (800 Gbps)": per node.
    cluster.inter_node_gbs =
        absl::StrContains(m.notes, "800Gbps") ? 100.0 : 50.0;
  }
  return cluster;
}

// The row's training: its stack, sequence, precision and the stack options
// its source ran with (the global batch is the layout's to set).
TrainingConfig RowTraining(RowMapping& m) {
  const std::string& source = m.run.source;
  const std::string& notes = m.notes;
  TrainingConfig t;
  t.stack = StackOf(source);
  std::optional<int64_t> seq = Int(m.row, "seq_len");
  if (!seq) {
    seq = 8192;
    m.Assume("sequence 8192, torchtitan's llama3 default (not given)");
  }
  t.seq_len = *seq;
  const std::string precision = Text(m.row, "precision");
  if (IsFp8(precision)) {
    t.precision = Precision::kFp8;
  } else if (precision.empty() && source == "megatron-bridge") {
    t.precision = Precision::kFp8;
    m.Assume("fp8 (precision not given; >700 model TFLOP/s on H100 implies it)");
  }
  if (source == "torchtitan") {
    const bool compiled = absl::StrContains(notes, "torch.compile");
    t.stack_options.push_back(compiled ? "compile" : "no-compile");
    // torchtitan compiles the loss with the blocks since 2025-04
    // (bbb1b616e); the rows' sources give their date.
    static const std::regex kDate("(20[0-9][0-9]-[0-9][0-9])");
    std::smatch date;
    const std::string full_source = Text(m.row, "source");
    if (compiled && std::regex_search(full_source, date, kDate) &&
        date[1].str() < "2025-04") {
      t.stack_options.push_back("eager-loss");
      m.Assume(absl::StrCat("torch.compile of the blocks only, the loss eager "
                            "(torchtitan before 2025-04; the source is ",
                            date[1].str(), ")"));
    }
    if ((absl::StrContains(notes, "AsyncTP") ||
         absl::StrContains(notes, "Async TP") ||
         absl::StrContains(notes, "async TP")) &&
        !absl::StrContains(notes, "vanilla TP")) {
      t.stack_options.push_back("async-tp");
    }
    if (absl::StrContains(precision, "rowwise")) {
      t.stack_options.push_back("float8-rowwise");
    }
  }
  if (source == "fms-fsdp") t.stack_options.push_back("compile");
  if (source == "megatron-bridge") {
    // Megatron-Bridge's H100 performance recipes (scripts/performance, then
    // perf_recipes/llama/h100): grad_reduce_in_fp32=False, and with fp8
    // fp8_param_gather=True.
    t.stack_options.push_back("grad-reduce-bf16");
    if (t.precision == Precision::kFp8) {
      t.stack_options.push_back("fp8-param-gather");
    }
  }
  if (source == "nemo-24.07") {
    // NVIDIA's scripts for these rows (NeMo-Framework-Launcher
    // examples/training/llama/h100/<model>_fp8.sh) add
    // optim.grad_sync_dtype=bf16 to Apex's distributed Adam with its
    // contiguous gradient buffer; fp8_params is not set.
    t.stack_options.push_back("grad-reduce-bf16");
  }
  if (source == "llm-foundry") {
    // Composer's FSDP defaults (fsdp_config: backward_prefetch BACKWARD_POST;
    // mixed_precision DEFAULT reduces in fp32, PURE in bf16).
    t.stack_options.push_back("backward-prefetch-post");
    if (absl::StrContains(notes, "MP mode DEFAULT")) {
      t.stack_options.push_back("reduce-fp32");
    }
  }
  return t;
}

// The row's layout: its degrees, micro-batch, sharding and recomputation,
// with the global batch and the selective-layer option set into `t`.
absl::StatusOr<Layout> RowLayout(RowMapping& m, const Sc21Split& sc21,
                                 int64_t gpus, int64_t per_node,
                                 TrainingConfig* t) {
  const Json& row = m.row;
  const std::string& source = m.run.source;
  Layout l;
  l.tp = Int(row, "tp").value_or(0);
  l.pp = Int(row, "pp").value_or(0);
  if (source == "megatron-lm-a100-2021") {
    l.tp = sc21.tp;
    l.pp = sc21.pp;
  }
  if (l.tp == 0) l.tp = 1;
  if (l.pp == 0) l.pp = 1;
  l.vpp = Int(row, "vpp").value_or(1);
  l.cp = Int(row, "cp").value_or(1);
  l.dp = gpus / (l.tp * l.pp * l.cp);
  if (l.dp * l.tp * l.pp * l.cp != gpus) {
    return absl::InvalidArgumentError("tp*pp*cp does not divide the GPUs");
  }
  if (source == "torchtitan" && l.pp > 1 &&
      absl::StrContains(m.notes, "Interleaved")) {
    l.vpp = 2;
    m.Assume("interleaved 1F1B with 2 stages per rank (not given)");
  }
  // Sequence parallelism with tensor parallelism wherever the stack has it:
  // Megatron-Core's --tp-comm-overlap needs it, torchtitan's was always on
  // with TP until 2026-03. An assumption where the stack makes it optional.
  TESSERA_ASSIGN_OR_RETURN(const TrainingStack* stack, FindStack(t->stack));
  l.sp = l.tp > 1 &&
         stack->layouts.sequence_parallel != SequenceParallel::kNever;
  if (l.sp && stack->layouts.sequence_parallel == SequenceParallel::kOptional) {
    m.Assume(absl::StrCat("sequence parallelism on with tp (optional in ",
                          stack->name, ", not given)"));
  }
  // Micro-batch and global batch.
  const std::optional<int64_t> local = Int(row, "micro_batch");
  if (source == "torchtitan" && l.pp > 1) {
    // "local batch" per DP rank, split into pp micro-batches (torchtitan's
    // default micro-batch count is the number of stages).
    l.micro_batch = std::max<int64_t>(1, local.value_or(1) / l.pp);
    m.Assume(absl::StrCat("local batch ", local.value_or(1), " in ", l.pp,
                          " pipeline micro-batches (count not given)"));
  } else if (local) {
    l.micro_batch = *local;
  } else {
    l.micro_batch = 1;
    m.Assume("micro-batch 1 (not given)");
  }
  std::optional<int64_t> gbs = Int(row, "global_batch_seqs");
  if (!gbs) {
    gbs = local.value_or(l.micro_batch) * l.dp;
    m.Assume("global batch = local batch x dp (not given)");
  }
  t->global_batch = *gbs;

  // Data parallelism.
  const std::string sharding = Text(row, "zero_or_fsdp");
  l.zero = 3;
  if (sharding.empty()) {
    if (source == "megatron-lm-a100-2021") {
      l.zero = 0;
    } else if (source == "nemo-24.07") {
      l.zero = 1;
      m.Assume(
          "optimizer states sharded (zero 1): NeMo's "
          "distributed_fused_adam");
    } else {
      l.zero = 1;
      m.Assume("distributed optimizer (zero 1): the README's overlap flags");
    }
  } else if (absl::StrContains(sharding, "ddp")) {
    l.zero = 1;
    m.Assume("FSDP=0 run with the distributed optimizer (zero 1)");
  } else if (absl::StrContains(sharding, "SHARD_GRAD_OP")) {
    l.zero = 2;
  } else if (absl::StrContains(sharding, "hsdp")) {
    l.shard_group = per_node / (l.tp * l.cp);
    m.Assume("HSDP sharded within each node of 8");
  }

  // Recomputation.
  const std::string ac = Text(row, "recompute");
  if (ac.empty()) {
    // The SC'21 paper's runs recompute every layer.
    l.recompute = source == "megatron-lm-a100-2021" ? Recompute::kFull
                                                    : Recompute::kNone;
    m.run.recompute_given = false;
    m.Assume(UnstatedRecomputeAssumption(l.recompute));
  } else if (ac == "none") {
    l.recompute = Recompute::kNone;
  } else if (ac == "full") {
    l.recompute = Recompute::kFull;
  } else if (absl::StartsWith(ac, "selective")) {
    l.recompute = Recompute::kSelective;
    if (absl::StrContains(ac, "layer")) {
      t->stack_options.push_back("selective-layer");
    }
    if (source == "fms-fsdp") {
      m.run.least_recompute_that_fits = true;
      m.Assume("selective_checkpointing not given: every other block "
               "checkpointed, or every block where that does not fit");
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat("recompute '", ac, "'"));
  }
  return l;
}

// The row's measurement: tokens/s per GPU as published, or from its TFLOP/s
// with Megatron's FLOP count, and its peak memory where the notes give it.
absl::Status RowMeasurement(RowMapping& m, const ModelConfig& model,
                            const TrainingConfig& t) {
  const Json& row = m.row;
  PublishedRun& r = m.run;
  if (row.contains("measured_tokens_per_s_per_gpu") &&
      !row["measured_tokens_per_s_per_gpu"].is_null()) {
    r.measured_tokens_per_s_per_gpu =
        row["measured_tokens_per_s_per_gpu"].get<double>();
  } else if (row.contains("measured_tflops_per_gpu") &&
             !row["measured_tflops_per_gpu"].is_null()) {
    const bool recompute_counted = r.source == "megatron-lm-a100-2021";
    r.measured_tokens_per_s_per_gpu =
        row["measured_tflops_per_gpu"].get<double>() * 1e12 /
        MegatronFlopsPerToken(model, t.seq_len, recompute_counted);
    r.tokens_derived_from_tflops = true;
    m.Assume(absl::StrCat("tokens/s from TFLOP/s with Megatron's ",
                          recompute_counted ? "96" : "72",
                          "*l*h^2 FLOP count"));
  } else {
    return absl::InvalidArgumentError("no measured throughput");
  }
  static const std::regex kPeak("peak mem ([0-9.]+) GiB");
  std::smatch match;
  if (std::regex_search(m.notes, match, kPeak)) {
    r.measured_peak_memory_gib = std::stod(match[1].str());
  }
  return absl::OkStatus();
}

// Maps one row; the reason when it cannot.
absl::StatusOr<PublishedRun> MapRow(int64_t index, const Json& row) {
  PublishedRun r;
  r.index = index;
  r.source = SourceOf(Text(row, "source"));
  if (r.source.empty()) {
    return absl::InvalidArgumentError("unknown source");
  }
  r.model = Text(row, "model");
  RowMapping m{row, r, Text(row, "notes")};
  Sc21Split sc21;
  TESSERA_ASSIGN_OR_RETURN(const ModelConfig model, RowModel(m, &sc21));
  int64_t gpus = 0, per_node = 0;
  TESSERA_ASSIGN_OR_RETURN(const ClusterConfig cluster,
                           RowCluster(m, &gpus, &per_node));
  TrainingConfig t = RowTraining(m);
  TESSERA_ASSIGN_OR_RETURN(const Layout l,
                           RowLayout(m, sc21, gpus, per_node, &t));
  r.workload = Workload{model, cluster, t};
  TESSERA_RETURN_IF_ERROR(RowMeasurement(m, model, t));
  TESSERA_RETURN_IF_ERROR(ValidateWorkload(r.workload));
  r.layout = l;
  r.group = absl::StrCat(r.source, "|", r.model, "|", cluster.gpu.name, "|",
                         gpus, "|", t.seq_len, "|", PrecisionName(t.precision),
                         "|", absl::StrJoin(t.stack_options, ","));
  return r;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

ErrorSummary Summarize(const std::vector<const ValidatedRun*>& rows) {
  ErrorSummary s;
  std::vector<double> errors, memory_ratios;
  double abs_sum = 0, memory_sum = 0, sum = 0;
  for (const ValidatedRun* r : rows) {
    ++s.rows;
    if (!r->evaluation.feasible) ++s.infeasible;
    errors.push_back(r->error);
    sum += r->error;
    abs_sum += std::abs(r->error);
    if (std::abs(r->error) > std::abs(s.worst_error)) s.worst_error = r->error;
    if (r->memory_ratio) {
      ++s.memory_rows;
      memory_ratios.push_back(*r->memory_ratio);
      const double e = *r->memory_ratio - 1;
      memory_sum += std::abs(e);
      if (std::abs(e) > std::abs(s.worst_memory_error)) {
        s.worst_memory_error = e;
      }
    }
  }
  if (s.rows > 0) {
    s.mape = abs_sum / static_cast<double>(s.rows);
    s.mean_error = sum / static_cast<double>(s.rows);
  }
  s.median_memory_ratio = Median(memory_ratios);
  if (s.memory_rows > 0) {
    s.memory_mape = memory_sum / static_cast<double>(s.memory_rows);
  }
  s.median_error = Median(errors);
  return s;
}

RankingSummary Rank(const std::vector<ValidatedRun>& rows) {
  std::map<std::string, std::vector<const ValidatedRun*>> groups;
  for (const ValidatedRun& r : rows) groups[r.run->group].push_back(&r);
  RankingSummary s;
  double spearman_sum = 0;
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    std::vector<double> predicted, measured;
    size_t best_predicted = 0, best_measured = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      predicted.push_back(members[i]->evaluation.prediction.tokens_per_s_per_gpu);
      measured.push_back(members[i]->run->measured_tokens_per_s_per_gpu);
      if (predicted[i] > predicted[best_predicted]) best_predicted = i;
      if (measured[i] > measured[best_measured]) best_measured = i;
    }
    ++s.groups;
    if (best_predicted == best_measured) ++s.best_matches;
    spearman_sum += SpearmanRho(predicted, measured);
  }
  if (s.groups > 0) s.mean_spearman = spearman_sum / static_cast<double>(s.groups);
  return s;
}

}  // namespace

std::string StackOfSource(absl::string_view source_text) {
  const std::string text(source_text);
  if (absl::StrContains(absl::AsciiStrToLower(text), "nanotron")) {
    return "nanotron";
  }
  const std::string source = SourceOf(text);
  return source.empty() ? "" : StackOf(source);
}

std::optional<std::string> GpuPresetOfName(absl::string_view gpu) {
  return GpuPresetOf(std::string(gpu));
}

void AssumeUnstatedRecompute(Recompute recompute, PublishedRuns* runs) {
  for (PublishedRun& run : runs->runs) {
    if (run.recompute_given) continue;
    std::replace(run.assumptions.begin(), run.assumptions.end(),
                 UnstatedRecomputeAssumption(run.layout.recompute),
                 UnstatedRecomputeAssumption(recompute));
    run.layout.recompute = recompute;
  }
}

absl::StatusOr<PublishedRuns> LoadPublishedRuns(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParsePublishedRuns(text.str(), path);
}

absl::StatusOr<PublishedRuns> ParsePublishedRuns(absl::string_view text,
                                                 absl::string_view source) {
  const Json file = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded() || !file.is_object() || !file.contains("rows") ||
      !file["rows"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not a JSON object with a rows list"));
  }
  PublishedRuns out;
  for (size_t i = 0; i < file["rows"].size(); ++i) {
    const Json& row = file["rows"][i];
    absl::StatusOr<PublishedRun> r;
    try {
      r = MapRow(static_cast<int64_t>(i), row);
    } catch (const Json::exception& e) {
      r = absl::InvalidArgumentError(absl::StrCat("malformed row: ", e.what()));
    }
    if (r.ok()) {
      out.runs.push_back(*std::move(r));
    } else {
      out.unmapped.push_back(UnmappedRun{
          static_cast<int64_t>(i),
          row.is_object() ? SourceOf(Text(row, "source")) : std::string(),
          std::string(r.status().message())});
    }
  }
  return out;
}

ValidationReport ValidatePublishedRuns(const PublishedRuns& runs) {
  ValidationReport report;
  report.unmapped = runs.unmapped;
  for (const PublishedRun& run : runs.runs) {
    ValidatedRun v;
    v.run = &run;
    absl::StatusOr<ResolvedWorkload> resolved = ResolveWorkload(run.workload);
    absl::StatusOr<Calibration> c =
        resolved.ok() ? DefaultCalibration(run.workload)
                      : absl::StatusOr<Calibration>(resolved.status());
    if (c.ok()) {
      v.evaluation = PredictLayout(*resolved, run.layout, *c);
      if (!v.evaluation.feasible && run.least_recompute_that_fits) {
        Layout full = run.layout;
        full.recompute = Recompute::kFull;
        v.evaluation = PredictLayout(*resolved, full, *c);
      }
    } else {
      v.evaluation.reason = std::string(c.status().message());
    }
    const double predicted = v.evaluation.prediction.tokens_per_s_per_gpu;
    v.error = predicted / run.measured_tokens_per_s_per_gpu - 1;
    if (run.measured_peak_memory_gib && v.evaluation.prediction.memory.total_bytes > 0) {
      v.memory_ratio = v.evaluation.prediction.memory.total_bytes / kGiB /
                       *run.measured_peak_memory_gib;
    }
    report.rows.push_back(v);
  }
  std::map<std::string, std::vector<const ValidatedRun*>> bf16, fp8;
  std::vector<const ValidatedRun*> all_bf16, all_fp8, all;
  for (const ValidatedRun& v : report.rows) {
    const bool is_fp8 = v.run->workload.training.precision == Precision::kFp8;
    (is_fp8 ? fp8 : bf16)[v.run->source].push_back(&v);
    (is_fp8 ? all_fp8 : all_bf16).push_back(&v);
    all.push_back(&v);
  }
  for (const auto& [source, rows] : bf16) {
    report.by_source_bf16[source] = Summarize(rows);
  }
  for (const auto& [source, rows] : fp8) {
    report.by_source_fp8[source] = Summarize(rows);
  }
  report.all_bf16 = Summarize(all_bf16);
  report.all_fp8 = Summarize(all_fp8);
  report.all = Summarize(all);
  report.ranking = Rank(report.rows);
  return report;
}

void PrintValidationReport(const ValidationReport& r, bool rows,
                           std::ostream& out) {
  auto line = [&](const std::string& name, const std::string& precision,
                  const ErrorSummary& s) {
    out << absl::StrFormat(
        "%-22s %-5s %5d %7d %8.1f%% %+8.1f%% %+8.1f%% %+8.1f%% %6d %6s %8s "
        "%9s\n",
        name, precision, s.rows, s.infeasible, 100 * s.mape,
        100 * s.mean_error, 100 * s.median_error, 100 * s.worst_error,
        s.memory_rows,
        s.memory_rows > 0 ? absl::StrFormat("%.2f", s.median_memory_ratio)
                          : "-",
        s.memory_rows > 0 ? absl::StrFormat("%.1f%%", 100 * s.memory_mape)
                          : "-",
        s.memory_rows > 0
            ? absl::StrFormat("%+.1f%%", 100 * s.worst_memory_error)
            : "-");
  };
  // infeas@0: rows called infeasible with no memory headroom, all of which
  // ran; bias: the mean signed error; memRatio: median predicted/measured.
  out << absl::StrFormat(
      "%-22s %-5s %5s %7s %9s %9s %9s %9s %6s %6s %8s %9s\n", "source",
      "prec", "rows", "infeas@0", "MAPE", "bias", "median", "worst", "mem",
      "memRat", "memMAPE", "memWorst");
  for (const auto& [source, s] : r.by_source_bf16) line(source, "bf16", s);
  for (const auto& [source, s] : r.by_source_fp8) line(source, "fp8", s);
  line("all", "bf16", r.all_bf16);
  line("all", "fp8", r.all_fp8);
  line("all", "both", r.all);
  out << absl::StrFormat(
      "ranking within %d groups of runs that differ only in layout: "
      "predicted best = measured best in %d, mean Spearman %.2f\n",
      r.ranking.groups, r.ranking.best_matches, r.ranking.mean_spearman);
  out << "not mapped: " << r.unmapped.size() << " rows\n";
  for (const UnmappedRun& u : r.unmapped) {
    out << "  row " << u.index << " (" << u.source << "): " << u.reason << "\n";
  }
  if (!rows) return;
  out << "\nrow source model gpus layout | measured predicted error | "
         "memory GiB measured predicted | assumptions\n";
  for (const ValidatedRun& v : r.rows) {
    const Prediction& p = v.evaluation.prediction;
    out << absl::StrFormat(
        "%3d %-14s %-14s %5d %s %s | %9.1f %9.1f %+6.1f%% | %s %6.1f | %s%s\n",
        v.run->index, v.run->source, v.run->model,
        v.run->workload.cluster.world_size(), v.run->workload.training.stack,
        FormatLayout(v.evaluation.layout),
        v.run->measured_tokens_per_s_per_gpu, p.tokens_per_s_per_gpu,
        100 * v.error,
        v.run->measured_peak_memory_gib
            ? absl::StrFormat("%6.1f", *v.run->measured_peak_memory_gib)
            : "     -",
        p.memory_gib_per_gpu,
        v.evaluation.feasible ? "" : absl::StrCat("[", v.evaluation.reason, "] "),
        absl::StrJoin(v.run->assumptions, "; "));
  }
}

void PrintValidatedRun(const ValidatedRun& v, std::ostream& out) {
  const PublishedRun& r = *v.run;
  const Prediction& p = v.evaluation.prediction;
  const MemoryBreakdown& m = p.memory;
  const TrainingConfig& t = r.workload.training;
  out << "row " << r.index << " (" << r.source << "): " << r.model << " on "
      << r.workload.cluster.world_size() << " x " << r.workload.cluster.gpu.name
      << ", stack " << t.stack << " [" << absl::StrJoin(t.stack_options, ",")
      << "], " << PrecisionName(t.precision) << ", seq " << t.seq_len
      << ", global batch " << t.global_batch << "\n  layout "
      << FormatLayout(v.evaluation.layout)
      << (v.evaluation.feasible ? "" : absl::StrCat("\n  infeasible: ",
                                                     v.evaluation.reason))
      << "\n";
  out << absl::StrFormat(
      "  tokens/s/GPU measured %.1f predicted %.1f (%+.1f%%)%s\n"
      "  step %.3f s = compute %.3f + exposed comm %.3f + bubble %.3f; comm "
      "tp %.3f cp %.3f pp %.3f dp %.3f; MFU %.1f%%\n"
      "  memory %.1f GiB%s: weights %.1f master %.1f grads %.1f optimizer "
      "%.1f activations %.1f logits %.1f gathered %.1f overhead %.1f\n",
      r.measured_tokens_per_s_per_gpu, p.tokens_per_s_per_gpu, 100 * v.error,
      r.tokens_derived_from_tflops ? " (measured from TFLOP/s)" : "",
      p.step_time_s, p.compute_s, p.exposed_comm_s, p.bubble_s, p.tp_comm_s,
      p.cp_comm_s, p.pp_comm_s, p.dp_comm_s, 100 * p.mfu, m.total_bytes / kGiB,
      r.measured_peak_memory_gib
          ? absl::StrFormat(" (measured %.1f)", *r.measured_peak_memory_gib)
          : "",
      m.weights_bytes / kGiB, m.master_weights_bytes / kGiB,
      m.gradients_bytes / kGiB, m.optimizer_bytes / kGiB,
      m.activations_bytes / kGiB, m.logits_bytes / kGiB,
      m.gathered_params_bytes / kGiB, m.overhead_bytes / kGiB);
  for (const std::string& a : r.assumptions) out << "  assumed: " << a << "\n";
}

}  // namespace tessera::costmodel
