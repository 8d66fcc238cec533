// Refits the cost model's calibration (calibration.h) to what trials measured:
// the coefficient values that make PredictLayout agree with the measured step
// times (and, where measured, the compute, communication and exposed
// communication times, the power per GPU and the peak memory per GPU), pulled
// toward a prior (the stack's defaults or the last fit) so that a few samples
// move only what they can identify.
//
// The objective, in each coefficient's shifted log u = log(x + offset) (offset
// 0 for a coefficient whose range starts above 0, else a tenth of its default,
// or of its maximum when the default is 0, so that 0 stays reachable):
//   sum over samples i, measured quantities q of
//       w_i * k_q * (log(pred_iq + f_iq) - log(meas_iq + f_iq))^2 / sd_m^2
//   + sum over fitted coefficients j of (u_j - u_prior_j)^2 / sd_p^2,
// w_i the sample weights scaled to average 1 (each sample counts once; the
// weights say which count more), k_q the quantity's weight (step time 1,
// compute/comm/exposed options.breakdown_weight, power options.power_weight,
// memory options.memory_weight), f_iq a floor for times that may be 0
// (comm, exposed comm: options.zero_floor_fraction of the measured step
// time; 0 otherwise),
// sd_m = options.measurement_log_sd and sd_p = options.prior_log_sd (a
// Gaussian prior in log space: the fit is the maximum a posteriori estimate).
// Every sample also ran, so its most loaded rank fitted in its GPU's memory:
// one more term per sample, weighted as measured memory, compares
// max(predicted layout peak, GPU memory) with the GPU memory (headroom 0):
// nothing while the prediction fits, log(peak / memory) beyond. A soft
// bound: the fit brings such a peak to the GPU's memory within about
// sd_m, not exactly under it.
// It is minimised by Levenberg-Marquardt over the fitted u's with
// finite-difference Jacobians, projected onto the coefficients' [min, max],
// followed by golden-section line searches along each coefficient (to leave
// the flat regions of max(0, comm - overlap) kinks) and LM again.
// Deterministic: the same input gives bit-identical output.
//
// Which coefficients are fitted (the rule): a coefficient not named in
// options.fixed is fitted when moving it by a factor of 2 up or down (in u,
// within its range) changes some measured quantity of some sample by more than
// options.min_sensitivity (relative, 1e-3). The others keep the prior's value
// exactly. In practice:
//   - compute (gemm_*, attention_efficiency, elementwise_traffic_factor,
//     optimizer_bytes_per_param): always, since every sample measures a step;
//   - ring_latency_factor: only with communication (collectives, pipeline or
//     context-parallel sends); intra_node_bw_efficiency: only with
//     communication that NVLink carries or, at half the efficiency, would
//     limit; inter_node_bw_efficiency: only with a group or send that spans
//     nodes;
//   - tp_overlap_efficiency: only with tp > 1; dp_overlap_efficiency: only with
//     DDP/ZeRO-1/2 traffic (dp > 1, zero <= 2); fsdp_*: only with zero-3
//     sharded over more than one rank; cp_overlap_efficiency: only with cp > 1
//     whose K/V ring is (partly) exposed at the prior or at half its overlap;
//   - overlap_compute_slowdown: only with data- or context-parallel traffic
//     that compute hides (comm/overlap.h);
//   - power_*: only with samples that measured watts_per_gpu (power_comm_
//     activity only if they communicate);
//   - memory_*, saved_activation_factor, logits_bytes_per_element: only with
//     samples that measured peak_memory_bytes (no time or power depends on
//     them), each where it moves that sample's predicted peak, or with a
//     sample the prior calls too big for its GPU (it ran); a sample
//     that measured peak_allocated_bytes moves the last two only (the
//     allocator's overhead is not in what tensors were handed).
// A sample with a single rank therefore moves only compute coefficients.
//
// Outliers (robust to a few bad measurements: a noisy neighbour, a trial
// that throttled, a report that passed the planner's bounds but is wrong):
// the fit is made with every sample, then the samples whose log step-time
// error log(fitted / measured) lies more than options.outlier_log_sds robust
// standard deviations from the median error are left out and the fit is
// made again without them, up to three rounds and at most
// options.max_outlier_fraction of the samples (so none with fewer than
// 1 / max_outlier_fraction samples). A round's fit is dragged by the
// outliers still in it, so a left-out sample that the final fit of the rest
// explains (the same rule, beside the kept samples' errors) is taken back
// and the fit made once more. The robust standard deviation is
// 1.4826 times the median absolute deviation of the errors (a normal's sd
// when there are no outliers), never below options.measurement_log_sd; with
// the defaults a sample must be off by more than 4 of them, at least a
// factor e^0.2 = 1.22 beyond the median error. Leaving out is undone when
// the fit of the rest still pushes a coefficient onto a bound of its range
// and more than a factor e^prior_log_sd from the prior: then the ranges
// cannot explain the samples (wrong hardware figures), not just the ones
// left out, and the fit of every sample stands with its warning. This is
// iterative trimming with a median/MAD rule rather than a robust loss
// (Huber, Cauchy) so that the fit names what it left out and the rest is an
// ordinary least-squares fit.
//
//   std::vector<CalibrationSample> samples = ...;  // one per finished trial
//   Calibration last = ...;  // the last fit for this GPU, or Calibration{}
//   TESSERA_ASSIGN_OR_RETURN(CalibrationFit fit,
//                            FitCalibration(samples, last, {}));
//   // fit.calibration for every later prediction; fit.warnings to the user.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/calibration/posterior_covariance.h"

namespace tessera::costmodel {

// What one trial measured, with what it ran. Times are per optimizer step
// (medians over the measured steps); an absent or NaN optional means "not
// measured" and leaves that quantity out of the fit.
struct CalibrationSample {
  // The trial's model (as trialed: possibly scaled down), the cluster it ran
  // on, and its global batch and sequence length.
  Workload workload;
  // The layout it ran; resolved against `workload` here (dp, grad_accum and
  // shard_group may be given or left at 0).
  Layout layout;
  double step_time_s = 0;                // required: positive and finite
  std::optional<double> compute_s;       // positive when present
  std::optional<double> comm_s;          // >= 0 when present
  std::optional<double> exposed_comm_s;  // >= 0 when present
  std::optional<double> watts_per_gpu;   // positive; absent: not measured
  // Peak device memory of the most loaded rank (what the allocator reserved
  // plus the process's fixed share, as the cost model predicts it).
  std::optional<double> peak_memory_bytes;  // positive; absent: not measured
  // Peak bytes the allocator handed to tensors on the most loaded rank
  // (torch.cuda.max_memory_allocated): compared with the predicted peak less
  // its overhead (workspace, fragmentation), so it identifies what the
  // tensors hold (saved activations, logits) and not the overhead.
  std::optional<double> peak_allocated_bytes;  // positive; absent: not
                                               // measured
  // The pipeline stage whose rank measured the memory above (0 to pp - 1),
  // for a source that reports one rank's (nanotron's logs: rank 0's);
  // absent: the most loaded rank's, the largest over the ranks.
  std::optional<int64_t> memory_stage;
  double weight = 1;  // relative trust (e.g. measured steps); positive
};

struct CalibrationFitOptions {
  // Log-space standard deviation of a measurement (0.05: about 5%).
  double measurement_log_sd = 0.05;
  // Log-space standard deviation of the prior on each coefficient (1.0: the
  // prior is trusted within about a factor of e).
  double prior_log_sd = 1.0;
  // Weight of measured compute, comm and exposed comm times (step time 1).
  double breakdown_weight = 0.5;
  // Weight of measured watts per GPU.
  double power_weight = 1.0;
  // Weight of measured peak memory per GPU.
  double memory_weight = 1.0;
  // Comm and exposed comm are compared as log(t + f), f this fraction of the
  // sample's measured step time (both may be 0).
  double zero_floor_fraction = 0.02;
  // Relative change of a measured quantity, under a factor-2 move of a
  // coefficient, below which the coefficient is not identifiable.
  double min_sensitivity = 1e-3;
  // Levenberg-Marquardt iterations per pass (two passes).
  int max_iterations = 100;
  // A fit whose step-time MAPE stays above this with a coefficient at a bound
  // gets a warning that the ranges cannot explain the measurements.
  double poor_fit_mape = 0.10;
  // Outliers (above): a sample more than this many robust standard
  // deviations of the log step-time errors from their median is left out; 0
  // leaves none out.
  double outlier_log_sds = 4.0;
  // At most this fraction of the samples is left out (0 to 0.5): a quarter,
  // so none of fewer than four (three samples cannot say which is wrong
  // with any confidence).
  double max_outlier_fraction = 0.25;
  // Coefficients kept at the prior whatever the samples identify. By default
  // the fixed costs per micro-batch: micro_batch_overhead_s (every sample
  // moves it: it adds to every micro-batch) and the host floor,
  // host_dispatch_s_per_layer and cross_node_pipeline_tp_stall_s (a floor
  // that binds at small micro-batches explains a slow trial as well as
  // slower compute does). A few trials would trade them against the compute
  // coefficients; a fit that has runs of many micro-batch sizes, from
  // compute-bound to host-bound, frees them (usp_sweep_bench does).
  std::vector<std::string> fixed = {"micro_batch_overhead_s",
                                    "host_dispatch_s_per_layer",
                                    "cross_node_pipeline_tp_stall_s"};
};

// How one sample's step time (and power, when measured) compares.
struct CalibrationSampleResidual {
  double measured_step_time_s = 0;
  double prior_step_time_s = 0;   // predicted with the prior
  double fitted_step_time_s = 0;  // predicted with the fit
  std::optional<double> measured_watts_per_gpu;
  double prior_watts_per_gpu = 0;
  double fitted_watts_per_gpu = 0;
  std::optional<double> measured_peak_memory_bytes;
  double prior_peak_memory_bytes = 0;
  double fitted_peak_memory_bytes = 0;
  // Left out of the fit as an outlier (its predictions are the final fit's).
  bool excluded = false;
  // fitted / measured - 1.
  double step_time_error() const {
    return fitted_step_time_s / measured_step_time_s - 1;
  }
};

struct CalibrationFit {
  Calibration calibration;            // the fit (the prior where not fitted)
  std::vector<std::string> fitted;    // coefficients that were free, in
                                      // Calibration::Infos() order
  std::vector<std::string> at_bound;  // fitted ones that ended at min or max
  // How well the measurements determine each fitted coefficient: its
  // posterior standard deviation in log space (u) at the fit, from the
  // Gauss-Newton curvature; near options.prior_log_sd, the measurements say
  // little about it.
  std::map<std::string, double> posterior_log_sd;
  // Their covariance (empty when the curvature could not be inverted).
  PosteriorCovariance posterior_covariance;
  // The prior's spread it was fitted with (options.prior_log_sd): what is
  // known of the coefficients that were not fitted.
  double prior_log_sd = 0;
  int64_t samples = 0;  // the samples fitted (the outliers not counted)
  // The samples left out as outliers (indices into the input, ascending).
  std::vector<size_t> excluded;
  // Mean over the fitted samples of |predicted / measured - 1| of the step
  // time.
  double prior_step_time_mape = 0;
  double fitted_step_time_mape = 0;
  // The objective (see above) at the prior and at the fit.
  double prior_objective = 0;
  double fitted_objective = 0;
  int iterations = 0;  // Levenberg-Marquardt steps taken
  // One per input sample, in order, the left-out ones marked `excluded`.
  std::vector<CalibrationSampleResidual> residuals;
  // What the caller should know: coefficients pushed to a bound, fits the
  // coefficients' ranges cannot make good (wrong hardware figures), samples
  // left out, and samples that ran but that the fit still predicts more
  // than 2% over their GPU's memory.
  std::vector<std::string> warnings;
};

// Fits the calibration to `samples` starting from `prior` (whose values must
// lie in their ranges). INVALID_ARGUMENT, naming the field, for no samples, a
// sample with an invalid workload, a layout that does not resolve or fit its
// workload, a measured value that is not positive (step_time_s, compute_s,
// watts_per_gpu, weight), negative (comm_s, exposed_comm_s) or not finite
// ("samples[3].step_time_s: ..."), an out-of-range prior ("prior.<name>: ..."),
// an unknown fixed name or bad options ("options.<field>: ...").
absl::StatusOr<CalibrationFit> FitCalibration(
    const std::vector<CalibrationSample>& samples, const Calibration& prior,
    const CalibrationFitOptions& options);

}  // namespace tessera::costmodel
