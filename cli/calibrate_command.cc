#include "cli/calibrate_command.h"

#include <memory>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/exit_codes.h"
#include "cli/measurement_file.h"
#include "core/file_io.h"
#include "core/flags.h"
#include "core/status_macros.h"
#include "costmodel/calibration/calibration_file.h"
#include "costmodel/fit/calibration_fit.h"
#include "costmodel/fit/fit_file.h"
#include "costmodel/stacks/stack_calibration.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera calibrate";

constexpr char kAbout[] =
    "Usage: tessera calibrate --measurements FILE... [--collectives "
    "[KIND=]FILE[@NODES]...]\n"
    "                         [--stack NAME --gpu NAME] [--out FILE] [--json]\n"
    "\n"
    "Fits the cost model's coefficients to measured runs and writes a\n"
    "calibration file for `tessera plan|predict --calibration FILE`. Every\n"
    "coefficient is listed with its value, its prior (the stack's default),\n"
    "whether it was fitted and how well the runs determine it, with the fit's\n"
    "error per measured quantity and what it was fitted from.\n"
    "\n"
    "--measurements: JSON Lines, one run per line:\n"
    "  {\"spec\": {StudySpec: model, cluster, training with stack},\n"
    "   \"layout\": \"tp=2,zero=1,micro_batch=2\",\n"
    "   \"measured\": {\"step_time_s\" or \"tokens_per_s_per_gpu\", and any "
    "of\n"
    "                \"peak_memory_gib\", \"compute_s\", \"comm_s\",\n"
    "                \"exposed_comm_s\", \"watts_per_gpu\"}}\n"
    "A malformed line stops the command and names its file, line and field;\n"
    "a run the model cannot express (unknown stack, a layout that does not\n"
    "resolve) is skipped and reported.\n"
    "\n"
    "--collectives: the cluster's measured bus bandwidth, used in place of\n"
    "the link figures: nccl-tests' output (all_gather_perf, reduce_scatter_\n"
    "perf, all_reduce_perf, sendrecv_perf; KIND= when the file name does not\n"
    "say it, @NODES when its rank lines do not) or CSV\n"
    "collective,nodes,gpus_per_node,bytes,busbw_gbs.\n";

// One --collectives value: [KIND=]FILE[@NODES].
absl::StatusOr<std::vector<costmodel::CollectiveMeasurement>> ReadCollectives(
    const std::string& value) {
  std::string file = value;
  std::optional<costmodel::CollectiveOp> op;
  int64_t nodes = 0;
  const size_t eq = file.find('=');
  if (eq != std::string::npos) {
    TESSERA_ASSIGN_OR_RETURN(op,
                             costmodel::ParseCollectiveOp(file.substr(0, eq)));
    file = file.substr(eq + 1);
  }
  const size_t at = file.rfind('@');
  if (at != std::string::npos) {
    if (!absl::SimpleAtoi(file.substr(at + 1), &nodes) || nodes < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--collectives: '", value, "': @NODES must be a positive integer"));
    }
    file = file.substr(0, at);
  }
  TESSERA_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  if (absl::StartsWith(text, "collective,")) {
    return costmodel::ParseCollectivesCsv(text, file);
  }
  return costmodel::ParseNcclTests(text, file, op, nodes);
}

void PrintSummary(const costmodel::CalibrationFile& f,
                  const std::vector<MeasurementFile>& files,
                  std::ostream& out) {
  out << "calibration for the " << f.stack << " stack"
      << (f.stack_options.empty()
              ? ""
              : absl::StrCat(" with ", absl::StrJoin(f.stack_options, ",")))
      << " on " << f.gpu << "\n";
  for (const MeasurementFile& m : files) {
    out << "  " << m.path << ": " << m.samples.size() << " runs, "
        << m.skipped.size() << " skipped\n";
    for (const SkippedMeasurement& s : m.skipped) {
      out << "    line " << s.line << " skipped: " << s.reason << "\n";
    }
  }
  if (f.samples > 0) {
    out << absl::StrFormat("step time MAPE %.1f%% -> %.1f%% over %d runs\n",
                           100 * f.step_time.prior_mape,
                           100 * f.step_time.fitted_mape, f.samples);
    if (f.peak_memory) {
      out << absl::StrFormat("peak memory MAPE %.1f%% -> %.1f%% over %d runs\n",
                             100 * f.peak_memory->prior_mape,
                             100 * f.peak_memory->fitted_mape,
                             f.peak_memory->samples);
    }
    if (f.watts) {
      out << absl::StrFormat("watts MAPE %.1f%% -> %.1f%% over %d runs\n",
                             100 * f.watts->prior_mape,
                             100 * f.watts->fitted_mape, f.watts->samples);
    }
    // A free coefficient is fitted when the runs at least halve its
    // prior's spread; otherwise it stays (about) at the stack's default.
    out << absl::StrFormat("%-28s %10s %10s %10s  %s\n", "free coefficient",
                           "default", "value", "log sd", "from");
    for (const std::string& name : f.fitted) {
      auto sd = f.posterior_log_sd.find(name);
      const bool known = sd != f.posterior_log_sd.end();
      const bool determined =
          known && f.prior_log_sd > 0 && sd->second <= 0.5 * f.prior_log_sd;
      out << absl::StrFormat(
          "%-28s %10.4g %10.4g %10s  %s\n", name, *f.prior.Get(name),
          *f.calibration.Get(name),
          known ? absl::StrFormat("%.3f", sd->second) : "—",
          determined
              ? "fitted by the runs"
              : absl::StrFormat(
                    "default (the runs do not determine "
                    "it: log sd %s of the prior's %.3f)",
                    known ? absl::StrFormat("%.3f", sd->second) : "unknown",
                    f.prior_log_sd));
    }
  }
  for (const std::string& w : f.warnings) out << "warning: " << w << "\n";
  if (f.calibration.collectives != nullptr) {
    out << "collectives: " << f.calibration.collectives->measurements().size()
        << " measurements of bus bandwidth\n";
  }
}

// Every flag of `tessera calibrate`.
struct CalibrateFlags {
  std::vector<std::string> measurements, collectives;
  std::optional<std::string> stack, gpu, out_path;
  bool json = false;
  std::optional<double> prior_sd;
  bool fit_fixed_costs = false;
};

void AddFlags(FlagSet& flags, CalibrateFlags& f) {
  flags.AddStrings("measurements", "FILE", "measured runs, JSON Lines",
                   &f.measurements);
  flags.AddStrings("collectives", "[KIND=]FILE[@NODES]",
                   "nccl-tests output or CSV of measured bus bandwidth",
                   &f.collectives);
  flags.AddString("stack", "NAME",
                  "the stack of a calibration from collectives alone",
                  &f.stack);
  flags.AddString("gpu", "NAME",
                  "the GPU preset of a calibration from collectives alone",
                  &f.gpu);
  flags.AddDouble("prior-sd", "SD",
                  "log-space spread of the prior on each coefficient "
                  "(default 0.3: the stack defaults are within about 30% on "
                  "published runs; raise it for hardware far from them)",
                  &f.prior_sd);
  flags.AddSwitch("fit-fixed-costs",
                  "also fit the fixed costs per micro-batch "
                  "(micro_batch_overhead_s) and the host floor "
                  "(host_dispatch_s_per_layer, "
                  "cross_node_pipeline_tp_stall_s), which fits otherwise "
                  "leave at the stack's values: for runs that span "
                  "micro-batch sizes, from compute-bound to host-bound",
                  &f.fit_fixed_costs);
  flags.AddString("out", "FILE", "write the calibration file", &f.out_path);
  flags.AddSwitch("json", "print the calibration file", &f.json);
}

// The measured runs of `paths`, all of one stack and one GPU (the first
// run's file:line named when another differs).
absl::Status ReadRuns(const std::vector<std::string>& paths,
                      std::vector<MeasurementFile>& files,
                      std::vector<costmodel::CalibrationSample>& samples) {
  std::string where;  // the first run's file:line
  for (const std::string& path : paths) {
    TESSERA_ASSIGN_OR_RETURN(MeasurementFile m, ReadMeasurements(path));
    for (size_t i = 0; i < m.samples.size(); ++i) {
      const costmodel::CalibrationSample& s = m.samples[i];
      const std::string at = absl::StrCat(path, ":", m.sample_lines[i]);
      if (!samples.empty()) {
        const Workload& first = samples.front().workload;
        if (s.workload.training.stack != first.training.stack ||
            s.workload.training.stack_options != first.training.stack_options) {
          return absl::InvalidArgumentError(absl::StrCat(
              at, ": spec.training.stack: this run's stack differs from ",
              where, "'s; a calibration is for one stack"));
        }
        if (s.workload.cluster.gpu.name != first.cluster.gpu.name) {
          return absl::InvalidArgumentError(absl::StrCat(
              at, ": spec.cluster.gpu: this run's GPU '",
              s.workload.cluster.gpu.name, "' differs from ", where, "'s '",
              first.cluster.gpu.name, "'; a calibration is for one GPU"));
        }
      } else {
        where = at;
      }
      samples.push_back(s);
    }
    files.push_back(std::move(m));
  }
  return absl::OkStatus();
}

// What the prior is taken for: the runs' stack, options and GPU, or, from
// collectives alone, --stack and --gpu.
struct PriorFor {
  std::string stack;
  std::vector<std::string> options;
  GpuSpec gpu;
};

absl::StatusOr<PriorFor> PriorForRuns(
    const std::vector<costmodel::CalibrationSample>& samples,
    const std::vector<MeasurementFile>& files, const CalibrateFlags& f) {
  PriorFor p;
  if (!samples.empty()) {
    p.stack = samples.front().workload.training.stack;
    p.options = samples.front().workload.training.stack_options;
    p.gpu = samples.front().workload.cluster.gpu;
    return p;
  }
  if (!f.gpu && !files.empty()) {
    // Every run was skipped: say why rather than ask for --gpu.
    std::vector<std::string> why;
    for (const MeasurementFile& m : files) {
      for (const SkippedMeasurement& k : m.skipped) {
        if (why.size() < 5) {
          why.push_back(absl::StrCat(m.path, ":", k.line, ": ", k.reason));
        }
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "--measurements: no run could be used",
        why.empty() ? " (the files hold none)"
                    : absl::StrCat(": ", absl::StrJoin(why, "; "))));
  }
  if (!f.gpu) {
    return absl::InvalidArgumentError(
        "--gpu: required with --collectives alone");
  }
  absl::StatusOr<GpuSpec> g = GpuPreset(*f.gpu);
  if (!g.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu: ", g.status().message()));
  }
  p.gpu = *g;
  p.stack = f.stack.value_or(kDefaultTrainingStack);
  if (!files.empty()) {
    return absl::InvalidArgumentError(
        "--measurements: no run could be expressed (see the skipped lines)");
  }
  return p;
}

// The calibration file: the stack's defaults on the GPU as the prior, the
// measured collectives in it, fitted to the runs when there are any, and
// where it was fitted from.
absl::StatusOr<costmodel::CalibrationFile> Calibrate(
    const PriorFor& p, const std::vector<costmodel::CalibrationSample>& samples,
    std::vector<costmodel::CollectiveMeasurement> measured,
    const std::vector<MeasurementFile>& files, const CalibrateFlags& f) {
  TESSERA_ASSIGN_OR_RETURN(const costmodel::TrainingStack* stack,
                           costmodel::FindStack(p.stack));
  TESSERA_ASSIGN_OR_RETURN(
      costmodel::Calibration prior,
      costmodel::StackCalibration(*stack, p.gpu, p.options));
  if (!measured.empty()) {
    prior.collectives =
        std::make_shared<costmodel::MeasuredCollectives>(std::move(measured));
  }
  std::optional<costmodel::CalibrationFit> fit;
  if (!samples.empty()) {
    costmodel::CalibrationFitOptions fit_options;
    fit_options.prior_log_sd = f.prior_sd.value_or(0.3);
    if (f.fit_fixed_costs) fit_options.fixed.clear();
    TESSERA_ASSIGN_OR_RETURN(
        fit, costmodel::FitCalibration(samples, prior, fit_options));
  }
  costmodel::CalibrationFile file = costmodel::MakeCalibrationFile(
      p.stack, p.options, p.gpu, prior, fit ? &*fit : nullptr);
  for (const MeasurementFile& m : files) {
    file.fitted_from.push_back(absl::StrCat(m.path, ": ", m.samples.size(),
                                            " runs (", m.skipped.size(),
                                            " skipped)"));
  }
  for (const std::string& c : f.collectives) {
    file.fitted_from.push_back(absl::StrCat("collectives: ", c));
  }
  return file;
}

}  // namespace

int RunCalibrate(const std::vector<std::string>& args, std::ostream& out,
                 std::ostream& err) {
  FlagSet flags(kCommand);
  CalibrateFlags f;
  AddFlags(flags, f);
  if (FlagSet::WantsHelp(args)) {
    out << kAbout << "\n" << flags.Help() << "\n" << kExitStatusHelp;
    return kExitOk;
  }
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  if (f.measurements.empty() && f.collectives.empty()) {
    return ReportError(err, kCommand,
                       absl::InvalidArgumentError(
                           "--measurements: required (or --collectives)"));
  }
  // Both shape the fit of measured runs; without runs nothing is fitted.
  if (f.measurements.empty() && (f.prior_sd || f.fit_fixed_costs)) {
    return ReportError(
        err, kCommand,
        absl::InvalidArgumentError(absl::StrCat(
            f.prior_sd ? "--prior-sd" : "--fit-fixed-costs",
            ": shapes the fit of measured runs; give --measurements")));
  }
  std::vector<MeasurementFile> files;
  std::vector<costmodel::CalibrationSample> samples;
  if (absl::Status s = ReadRuns(f.measurements, files, samples); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  std::vector<costmodel::CollectiveMeasurement> measured;
  for (const std::string& value : f.collectives) {
    absl::StatusOr<std::vector<costmodel::CollectiveMeasurement>> c =
        ReadCollectives(value);
    if (!c.ok()) return ReportError(err, kCommand, c.status());
    measured.insert(measured.end(), c->begin(), c->end());
  }
  absl::StatusOr<PriorFor> prior_for = PriorForRuns(samples, files, f);
  if (!prior_for.ok()) return ReportError(err, kCommand, prior_for.status());
  absl::StatusOr<costmodel::CalibrationFile> file =
      Calibrate(*prior_for, samples, std::move(measured), files, f);
  if (!file.ok()) return ReportError(err, kCommand, file.status());
  const std::string text = costmodel::CalibrationFileJson(*file);
  if (f.out_path) {
    if (absl::Status w = WriteFileAtomically(*f.out_path, text); !w.ok()) {
      return ReportError(err, kCommand, w);
    }
  }
  if (f.json) {
    out << text;
  } else {
    PrintSummary(*file, files, out);
    if (f.out_path) out << "wrote " << *f.out_path << "\n";
  }
  return kExitOk;
}

}  // namespace tessera::cli
