#include "costmodel/calibration/measured_collectives.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tessera::costmodel {
namespace {

constexpr const char* kOpNames[] = {"all_reduce", "all_gather",
                                    "reduce_scatter", "sendrecv"};

absl::Status LineError(absl::string_view source, size_t line,
                       absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ":", line, ": ", what));
}

}  // namespace

absl::string_view CollectiveOpName(CollectiveOp op) {
  return kOpNames[static_cast<int>(op)];
}

absl::StatusOr<CollectiveOp> ParseCollectiveOp(absl::string_view name) {
  for (int i = 0; i < 4; ++i) {
    if (name == kOpNames[i]) return static_cast<CollectiveOp>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "collective: '", name,
      "' is not all_gather, reduce_scatter, all_reduce or sendrecv"));
}

MeasuredCollectives::MeasuredCollectives(std::vector<CollectiveMeasurement> m) {
  Add(m);
}

void MeasuredCollectives::Add(const std::vector<CollectiveMeasurement>& more) {
  measurements_.insert(measurements_.end(), more.begin(), more.end());
  std::sort(measurements_.begin(), measurements_.end(),
            [](const CollectiveMeasurement& a, const CollectiveMeasurement& b) {
              if (a.op != b.op) return a.op < b.op;
              if (a.nodes != b.nodes) return a.nodes < b.nodes;
              return a.bytes < b.bytes;
            });
  for (std::vector<NodeCurve>& curves : curves_) curves.clear();
  for (const CollectiveMeasurement& m : measurements_) {
    if (!(m.bytes > 0)) continue;
    std::vector<NodeCurve>& curves = curves_[static_cast<int>(m.op)];
    if (curves.empty() || curves.back().nodes != m.nodes) {
      NodeCurve curve;
      curve.nodes = m.nodes;
      curve.log_nodes =
          std::log(static_cast<double>(std::max<int64_t>(m.nodes, 1)));
      curve.gpus_per_node = m.gpus_per_node;
      curves.push_back(std::move(curve));
    }
    curves.back().log_bytes.push_back(std::log(m.bytes));
    curves.back().busbw_gbs.push_back(m.busbw_gbs);
  }
}

bool MeasuredCollectives::Covers(CollectiveOp op) const {
  return !curves_[static_cast<int>(op)].empty();
}

double MeasuredCollectives::NodeCurve::At(double x) const {
  const std::vector<double>& xs = log_bytes;
  if (x <= xs.front()) return busbw_gbs.front();
  if (x >= xs.back()) return busbw_gbs.back();
  const size_t i = std::upper_bound(xs.begin(), xs.end(), x) - xs.begin();
  const double t = (x - xs[i - 1]) / (xs[i] - xs[i - 1]);
  return busbw_gbs[i - 1] + t * (busbw_gbs[i] - busbw_gbs[i - 1]);
}

std::optional<double> MeasuredCollectives::BusBandwidthGbs(
    CollectiveOp op, double bytes, int64_t nodes) const {
  const std::vector<NodeCurve>& curves = curves_[static_cast<int>(op)];
  if (curves.empty()) return std::nullopt;
  const double log_bytes = std::log(std::max(bytes, 1.0));
  if (curves.size() == 1) return curves.front().At(log_bytes);
  const double x = std::log(static_cast<double>(std::max<int64_t>(nodes, 1)));
  // Between measured node counts: linear in log(nodes) of log(busbw); beyond
  // them, the outermost pair's log-log slope clamped to [-1, 0].
  const bool above = x > curves.back().log_nodes;
  const bool below = x < curves.front().log_nodes;
  size_t a = 0;
  if (above) {
    a = curves.size() - 2;
  } else if (!below) {
    while (a + 2 < curves.size() && curves[a + 1].log_nodes < x) ++a;
  }
  const NodeCurve& lo = curves[a];
  const NodeCurve& hi = curves[a + 1];
  const double y_lo = std::log(std::max(lo.At(log_bytes), 1e-9));
  const double y_hi = std::log(std::max(hi.At(log_bytes), 1e-9));
  const double slope = (y_hi - y_lo) / (hi.log_nodes - lo.log_nodes);
  if (!above && !below) return std::exp(y_lo + slope * (x - lo.log_nodes));
  const double clamped = std::clamp(slope, -1.0, 0.0);
  return above ? std::exp(y_hi + clamped * (x - hi.log_nodes))
               : std::exp(y_lo + clamped * (x - lo.log_nodes));
}

int64_t MeasuredCollectives::MeasuredGpusPerNode(CollectiveOp op,
                                                 int64_t nodes) const {
  int64_t best = 0;
  int64_t best_distance = -1;
  for (const NodeCurve& c : curves_[static_cast<int>(op)]) {
    const int64_t d = std::abs(c.nodes - nodes);
    if (best_distance < 0 || d < best_distance) {
      best_distance = d;
      best = c.gpus_per_node;
    }
  }
  return best;
}

std::pair<double, double> MeasuredCollectives::MeasuredBytesRange(
    CollectiveOp op) const {
  const std::vector<NodeCurve>& curves = curves_[static_cast<int>(op)];
  if (curves.empty()) return {0, 0};
  double lo = curves.front().log_bytes.front();
  double hi = curves.front().log_bytes.back();
  for (const NodeCurve& c : curves) {
    lo = std::min(lo, c.log_bytes.front());
    hi = std::max(hi, c.log_bytes.back());
  }
  return {std::exp(lo), std::exp(hi)};
}

absl::StatusOr<std::vector<CollectiveMeasurement>> ParseNcclTests(
    absl::string_view text, absl::string_view source,
    std::optional<CollectiveOp> op, int64_t nodes) {
  if (!op.has_value()) {
    for (int i = 0; i < 4; ++i) {
      if (absl::StrContains(source, kOpNames[i])) {
        op = static_cast<CollectiveOp>(i);
      }
    }
    if (!op.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source,
          ": cannot tell the collective from the file name: name it "
          "(all_gather=FILE, reduce_scatter=FILE, all_reduce=FILE, "
          "sendrecv=FILE)"));
    }
  }
  std::set<std::string> hosts;
  int64_t ranks = 0;
  std::vector<CollectiveMeasurement> out;
  size_t line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty()) continue;
    if (absl::StartsWith(line, "#")) {
      // "#  Rank  3 Group  0 Pid  123 on     host-a device  3 [...] ..."
      std::vector<absl::string_view> f =
          absl::StrSplit(line.substr(1), ' ', absl::SkipEmpty());
      if (f.size() >= 8 && f[0] == "Rank" && f[6] == "on") {
        hosts.insert(std::string(f[7]));
        ++ranks;
      }
      continue;
    }
    // size count type redop root time algbw busbw #wrong time algbw busbw
    // #wrong (out-of-place, then in-place).
    std::vector<absl::string_view> f =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 8) {
      return LineError(source, line_no,
                       "expected nccl-tests' columns size, count, type, "
                       "redop, root, time, algbw, busbw");
    }
    double bytes = 0, busbw = 0;
    if (!absl::SimpleAtod(f[0], &bytes) || !absl::SimpleAtod(f[7], &busbw) ||
        !(bytes > 0) || !(busbw >= 0) || !std::isfinite(busbw)) {
      return LineError(source, line_no,
                       absl::StrCat("size '", f[0], "' or busbw '", f[7],
                                    "' is not a number"));
    }
    if (busbw == 0) continue;  // sizes too small to time
    out.push_back(CollectiveMeasurement{*op, 0, 0, bytes, busbw});
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no measurement lines"));
  }
  const int64_t n =
      nodes > 0 ? nodes : std::max<int64_t>(1, static_cast<int64_t>(hosts.size()));
  if (ranks == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": no '# Rank ... on HOST' lines to count the GPUs by"));
  }
  if (ranks % n != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": ", ranks, " ranks do not split evenly over ", n, " nodes"));
  }
  for (CollectiveMeasurement& m : out) {
    m.nodes = n;
    m.gpus_per_node = ranks / n;
  }
  return out;
}

absl::StatusOr<std::vector<CollectiveMeasurement>> ParseCollectivesCsv(
    absl::string_view text, absl::string_view source) {
  std::vector<CollectiveMeasurement> out;
  size_t line_no = 0;
  bool header = false;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    const absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty()) continue;
    std::vector<std::string> f = absl::StrSplit(line, ',');
    for (std::string& field : f) {
      field = std::string(absl::StripAsciiWhitespace(field));
    }
    if (!header) {
      if (f != std::vector<std::string>{"collective", "nodes",
                                         "gpus_per_node", "bytes",
                                         "busbw_gbs"}) {
        return LineError(source, line_no,
                         "the header must be "
                         "collective,nodes,gpus_per_node,bytes,busbw_gbs");
      }
      header = true;
      continue;
    }
    if (f.size() != 5) {
      return LineError(source, line_no, "expected 5 fields");
    }
    absl::StatusOr<CollectiveOp> op = ParseCollectiveOp(f[0]);
    if (!op.ok()) return LineError(source, line_no, op.status().message());
    CollectiveMeasurement m;
    m.op = *op;
    double busbw = 0, bytes = 0;
    if (!absl::SimpleAtoi(f[1], &m.nodes) || m.nodes < 1) {
      return LineError(source, line_no, "nodes: a positive integer");
    }
    if (!absl::SimpleAtoi(f[2], &m.gpus_per_node) || m.gpus_per_node < 1) {
      return LineError(source, line_no, "gpus_per_node: a positive integer");
    }
    if (!absl::SimpleAtod(f[3], &bytes) || !(bytes > 0) ||
        !std::isfinite(bytes)) {
      return LineError(source, line_no, "bytes: a positive number");
    }
    if (!absl::SimpleAtod(f[4], &busbw) || !(busbw > 0) ||
        !std::isfinite(busbw)) {
      return LineError(source, line_no, "busbw_gbs: a positive number");
    }
    m.bytes = bytes;
    m.busbw_gbs = busbw;
    out.push_back(m);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no measurements after the header"));
  }
  return out;
}

}  // namespace tessera::costmodel
