#include "executor/tessera_trial/probes.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "executor/comm/run_ranks.h"
#include "executor/tessera_trial/cpu_peak.h"

namespace tessera::executor {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Host memory copy bandwidth: best of a few memcpy of `bytes`.
double MemcpyGbs(int64_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 0);
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    const Clock::time_point start = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    if (i > 0) best = std::min(best, Seconds(start));
  }
  return static_cast<double>(bytes) / best / 1e9;
}

enum class Op { kAllReduce, kAllGather, kReduceScatter };

// Bus bandwidth (GB/s) of `op` over `n` thread ranks on a buffer of `bytes`
// (the whole buffer, as nccl-tests sizes it): the best of 3 timed calls
// after one warm-up, slowest rank each time.
double CollectiveBusGbs(Op op, int n, int64_t bytes) {
  const int64_t count = bytes / 4;
  std::vector<double> best(n, 1e30);
  RunRanks(n, [&](int rank, Communicator& comm) -> absl::Status {
    std::vector<float> send(op == Op::kAllGather ? count / n : count, 1.0f);
    std::vector<float> recv(op == Op::kReduceScatter ? count / n : count);
    const Tensor s{send.data(), DType::kF32, static_cast<int64_t>(send.size())};
    const Tensor r{recv.data(), DType::kF32, static_cast<int64_t>(recv.size())};
    for (int i = 0; i < 4; ++i) {
      if (absl::Status st = comm.Barrier(); !st.ok()) return st;
      const Clock::time_point start = Clock::now();
      absl::Status st;
      switch (op) {
        case Op::kAllReduce:
          st = comm.AllReduce(s, r, ReduceOp::kSum);
          break;
        case Op::kAllGather:
          st = comm.AllGather(s, r);
          break;
        case Op::kReduceScatter:
          st = comm.ReduceScatter(s, r, ReduceOp::kSum);
          break;
      }
      if (!st.ok()) return st;
      if (i > 0) best[rank] = std::min(best[rank], Seconds(start));
    }
    return absl::OkStatus();
  });
  const double t = *std::max_element(best.begin(), best.end());
  const double algbw = static_cast<double>(bytes) / t / 1e9;
  const double factor =
      op == Op::kAllReduce ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
  return algbw * factor;
}

}  // namespace

std::vector<ProbeResult> RunCpuProbes(int ranks) {
  std::vector<ProbeResult> probes;
  probes.push_back({"gemm_f32", 1, 0, MeasureCpuPeakTflops(), "TFLOP/s"});
  probes.push_back({"memcpy", 1, 64 << 20, MemcpyGbs(64 << 20), "GB/s"});
  std::vector<int> sizes;
  for (int n = 2; n <= ranks; n *= 2) sizes.push_back(n);
  if (ranks > 1 && sizes.back() != ranks) sizes.push_back(ranks);
  const std::pair<Op, const char*> ops[] = {
      {Op::kAllReduce, "allreduce"},
      {Op::kAllGather, "allgather"},
      {Op::kReduceScatter, "reducescatter"}};
  for (int n : sizes) {
    for (int64_t bytes : {int64_t{1} << 20, int64_t{16} << 20}) {
      // Buffers divisible by every group size's rank count.
      const int64_t rounded = bytes / (4 * n) * (4 * n);
      for (const auto& [op, name] : ops) {
        probes.push_back(
            {name, n, rounded, CollectiveBusGbs(op, n, rounded), "GB/s"});
      }
    }
  }
  return probes;
}

nlohmann::json ProbesToJson(const std::vector<ProbeResult>& probes) {
  nlohmann::json list = nlohmann::json::array();
  for (const ProbeResult& p : probes) {
    list.push_back({{"kind", p.kind},
                    {"group_size", p.group_size},
                    {"bytes", p.bytes},
                    {"value", p.value},
                    {"unit", p.unit}});
  }
  return nlohmann::json{{"probes", list}};
}

}  // namespace tessera::executor
