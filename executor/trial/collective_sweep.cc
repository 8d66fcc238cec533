#include "executor/trial/collective_sweep.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tessera::executor {
namespace {

using Clock = std::chrono::steady_clock;

// One call of `collective` on buffers sized for `bytes` (see the header).
absl::Status CallOnce(const std::string& collective, Communicator& world,
                      const Tensor& send, const Tensor& recv) {
  if (collective == "all_gather") return world.AllGather(send, recv);
  if (collective == "reduce_scatter") {
    return world.ReduceScatter(send, recv, ReduceOp::kSum);
  }
  if (collective == "all_reduce") {
    return world.AllReduce(send, recv, ReduceOp::kSum);
  }
  // sendrecv: a ring shift, posted together so that no rank waits on a
  // send before its receive.
  const int n = world.size();
  const int next = (world.rank() + 1) % n;
  const int prev = (world.rank() + n - 1) % n;
  TESSERA_RETURN_IF_ERROR(world.GroupStart());
  TESSERA_RETURN_IF_ERROR(world.Send(send, next));
  TESSERA_RETURN_IF_ERROR(world.Recv(recv, prev));
  return world.GroupEnd();
}

// Element counts of the send and receive buffers of `collective` on `n`
// ranks for a whole buffer of `elements`.
std::pair<int64_t, int64_t> BufferElements(const std::string& collective,
                                           int64_t elements, int n) {
  if (collective == "all_gather") return {elements / n, elements};
  if (collective == "reduce_scatter") return {elements, elements / n};
  return {elements, elements};
}

}  // namespace

absl::StatusOr<double> BusBandwidthGbs(const std::string& collective,
                                       int64_t bytes, double seconds,
                                       int64_t ranks) {
  if (ranks < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("ranks: a collective needs at least 2, got ", ranks));
  }
  if (!(seconds > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("seconds: must be positive, got ", seconds));
  }
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  const double n = static_cast<double>(ranks);
  if (collective == "all_reduce") return algbw * 2 * (n - 1) / n;
  if (collective == "all_gather" || collective == "reduce_scatter") {
    return algbw * (n - 1) / n;
  }
  if (collective == "sendrecv") return algbw;
  return absl::InvalidArgumentError(
      absl::StrCat("collective: unknown '", collective,
                   "' (all_gather, reduce_scatter, all_reduce, sendrecv)"));
}

absl::StatusOr<std::vector<SweptCollective>> SweepCollectives(
    Communicator& world, Backend& backend, int64_t ranks_per_node,
    const CollectiveSweepOptions& options) {
  const int n = world.size();
  if (n < 2) {
    return absl::InvalidArgumentError(
        "world: a collective sweep needs at least 2 ranks");
  }
  if (ranks_per_node < 1 || n % ranks_per_node != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ranks_per_node: ", ranks_per_node,
                     " does not divide the world's ", n, " ranks"));
  }
  if (options.min_bytes < 1 || options.max_bytes < options.min_bytes ||
      options.size_factor < 2 || options.timed_iterations < 1 ||
      options.warmup_iterations < 0) {
    return absl::InvalidArgumentError(
        "options: need 1 <= min_bytes <= max_bytes, size_factor >= 2, "
        "timed_iterations >= 1, warmup_iterations >= 0");
  }
  // The largest buffers once; smaller sizes use their prefixes.
  const int64_t max_elements = options.max_bytes / 4 / n * n;
  if (max_elements < n) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.max_bytes: ", options.max_bytes,
                     " is under 4 bytes per rank of ", n));
  }
  TESSERA_ASSIGN_OR_RETURN(
      DeviceBuffer send_buffer,
      backend.Allocate(max_elements, DType::kF32, "collective sweep send"));
  TESSERA_ASSIGN_OR_RETURN(
      DeviceBuffer recv_buffer,
      backend.Allocate(max_elements, DType::kF32, "collective sweep receive"));
  TESSERA_ASSIGN_OR_RETURN(
      DeviceBuffer time_buffer,
      backend.Allocate(1, DType::kF32, "collective sweep time"));

  std::vector<SweptCollective> out;
  for (int64_t bytes = options.min_bytes; bytes <= options.max_bytes;
       bytes *= options.size_factor) {
    const int64_t elements = bytes / 4 / n * n;
    if (elements < n) continue;
    for (const char* name : kSweptCollectives) {
      const std::string collective = name;
      const auto [send_n, recv_n] = BufferElements(collective, elements, n);
      const Tensor send = send_buffer.view().Slice(0, send_n);
      const Tensor recv = recv_buffer.view().Slice(0, recv_n);
      double best_s = 1e30;
      for (int i = 0; i < options.warmup_iterations + options.timed_iterations;
           ++i) {
        TESSERA_RETURN_IF_ERROR(world.Barrier());
        const Clock::time_point start = Clock::now();
        TESSERA_RETURN_IF_ERROR(CallOnce(collective, world, send, recv));
        backend.Synchronize();
        const double s =
            std::chrono::duration<double>(Clock::now() - start).count();
        if (i >= options.warmup_iterations) best_s = std::min(best_s, s);
      }
      // The slowest rank's best, agreed by every rank (float seconds:
      // enough for a bandwidth figure).
      float slowest = static_cast<float>(best_s);
      backend.CopyFromHost(&slowest, time_buffer.view());
      TESSERA_RETURN_IF_ERROR(world.AllReduce(
          time_buffer.view(), time_buffer.view(), ReduceOp::kMax));
      backend.CopyToHost(time_buffer.view(), &slowest);
      const int64_t whole_bytes = elements * 4;
      TESSERA_ASSIGN_OR_RETURN(
          const double busbw,
          BusBandwidthGbs(collective, whole_bytes, slowest, n));
      out.push_back({collective, n / ranks_per_node, ranks_per_node,
                     whole_bytes, slowest, busbw});
    }
  }
  return out;
}

nlohmann::json SweepToJson(const std::vector<SweptCollective>& swept) {
  nlohmann::json list = nlohmann::json::array();
  for (const SweptCollective& s : swept) {
    list.push_back({{"collective", s.collective},
                    {"nodes", s.nodes},
                    {"gpus_per_node", s.gpus_per_node},
                    {"bytes", s.bytes},
                    {"seconds", s.seconds},
                    {"busbw_gbs", s.busbw_gbs}});
  }
  return nlohmann::json{{"collectives", list}};
}

}  // namespace tessera::executor
