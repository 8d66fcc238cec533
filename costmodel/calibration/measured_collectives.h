// Measured bus bandwidth of a cluster's collectives (nccl-tests' all_gather,
// reduce_scatter, all_reduce and sendrecv sweeps, or a CSV of the same
// figures), used in place of the preset link figures where it covers the
// collective (collectives.h).
//
// A measurement is (collective, nodes, GPUs per node, bytes, bus bandwidth);
// bytes and bus bandwidth in nccl-tests' conventions (the AllGather output,
// the ReduceScatter input, the AllReduce buffer; busbw = algbw * (n-1)/n or
// 2(n-1)/n). The lookup for a group of `nodes` nodes and `bytes`:
//   - at a measured node count: interpolated linearly in log(bytes) between
//     the nearest measured sizes, held at the ends;
//   - between measured node counts: interpolated in log(nodes);
//   - beyond the largest (or below the smallest): extrapolated with the
//     log-log slope between the two outermost node counts, clamped to
//     [-1, 0] (bandwidth never grows with nodes, and falls at most in
//     inverse proportion); with one node count measured, held constant.
// A group that places fewer GPUs per node than the measurement (a data-
// parallel group one rank per node, say) gets the measured figure scaled by
// the modelled ratio of the two placements (collectives.h: its share of the
// node's NICs), so the structure of the model stays and the figures are the
// cluster's.
//
//   TESSERA_ASSIGN_OR_RETURN(MeasuredCollectives m,
//                            ParseNcclTests(text, "ag.txt", 0));
//   double busbw = m.BusBandwidthGbs(CollectiveOp::kAllGather, 1e9, 16, 8);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::costmodel {

enum class CollectiveOp { kAllReduce, kAllGather, kReduceScatter, kSendRecv };

absl::string_view CollectiveOpName(CollectiveOp op);  // "all_gather", ...
absl::StatusOr<CollectiveOp> ParseCollectiveOp(absl::string_view name);

struct CollectiveMeasurement {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  double bytes = 0;
  double busbw_gbs = 0;
};

class MeasuredCollectives {
 public:
  MeasuredCollectives() = default;
  explicit MeasuredCollectives(std::vector<CollectiveMeasurement> m);

  const std::vector<CollectiveMeasurement>& measurements() const {
    return measurements_;
  }
  bool empty() const { return measurements_.empty(); }
  bool Covers(CollectiveOp op) const;
  // Adds measurements (kept sorted).
  void Add(const std::vector<CollectiveMeasurement>& more);

  // The bus bandwidth, GB/s, of `op` over `bytes` on `nodes` nodes as
  // measured with the measurements' GPUs per node (see above); nullopt when
  // `op` was not measured.
  std::optional<double> BusBandwidthGbs(CollectiveOp op, double bytes,
                                        int64_t nodes) const;
  // The GPUs per node of the measurements of `op` on the nearest node count
  // to `nodes` (0 when `op` was not measured).
  int64_t MeasuredGpusPerNode(CollectiveOp op, int64_t nodes) const;
  // The smallest and largest size, bytes, `op` was measured at on any node
  // count ({0, 0} when it was not): inside it the lookup interpolates
  // measurements, outside it holds the nearest (collectives.h carries
  // those to other sizes with the model's latencies).
  std::pair<double, double> MeasuredBytesRange(CollectiveOp op) const;

 private:
  // The measurements of one collective on one node count, by size: the
  // lookup's index, rebuilt by Add so that a lookup allocates nothing and
  // reads only the curves it interpolates between.
  struct NodeCurve {
    int64_t nodes = 1;
    double log_nodes = 0;
    int64_t gpus_per_node = 1;
    std::vector<double> log_bytes;  // ascending
    std::vector<double> busbw_gbs;
    // Busbw at log(bytes), linear in log(bytes), held at the ends.
    double At(double log_bytes_wanted) const;
  };

  std::vector<CollectiveMeasurement> measurements_;
  std::vector<NodeCurve> curves_[4];  // by CollectiveOp, ascending nodes
};

// Parses nccl-tests' standard output (all_gather_perf, reduce_scatter_perf,
// all_reduce_perf, sendrecv_perf): the collective from `op` or, when nullopt,
// from the file name (it must contain all_gather, reduce_scatter, all_reduce
// or sendrecv); nodes from the distinct hosts of its "# Rank" lines unless
// `nodes` > 0; the out-of-place size and busbw columns. Errors name `source`
// and the line: "ag.txt:14: ...".
absl::StatusOr<std::vector<CollectiveMeasurement>> ParseNcclTests(
    absl::string_view text, absl::string_view source,
    std::optional<CollectiveOp> op, int64_t nodes);

// Parses CSV with the header `collective,nodes,gpus_per_node,bytes,busbw_gbs`.
absl::StatusOr<std::vector<CollectiveMeasurement>> ParseCollectivesCsv(
    absl::string_view text, absl::string_view source);

}  // namespace tessera::costmodel
