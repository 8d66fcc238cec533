// Throughput of TcpCommunicator's AllReduce over loopback (Google
// Benchmark; not run by ctest). Every rank is a thread of this process with
// its own TCP world (own sockets and reader threads), as RunTcpRanks runs
// them; rank 0 is the benchmark's thread and times each AllReduce, the
// others follow its lead (a one-int Broadcast before each, not timed).
//
//   tcp_allreduce_bench --benchmark_filter='AllReduce/4/67108864'
//
// Reports algbw = bytes / time and busbw = algbw * 2(n-1)/n, as nccl-tests
// define them for AllReduce (NCCL's PERFORMANCE.md).
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "executor/comm/tcp_communicator.h"

namespace tessera::executor {
namespace {

using Clock = std::chrono::steady_clock;

// Rank r's part: connect, then AllReduce whenever rank 0 says go.
void FollowerRank(int rank, int n, const TcpWorldOptions& options,
                  int64_t count) {
  absl::StatusOr<std::unique_ptr<Communicator>> world =
      ConnectTcpWorld(rank, n, options);
  if (!world.ok()) return;
  std::vector<float> buf(count, 1.0f);
  const Tensor t{buf.data(), DType::kF32, count};
  for (;;) {
    int32_t go = 0;
    if (!(*world)->Broadcast(Tensor{&go, DType::kI32, 1}, 0).ok() || !go) {
      return;
    }
    if (!(*world)->AllReduce(t, t, ReduceOp::kSum).ok()) return;
  }
}

void BM_TcpAllReduce(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int64_t bytes = state.range(1);
  const int64_t count = bytes / 4;  // f32
  std::string folder = "/tmp/tessera-tcp-bench-XXXXXX";
  if (::mkdtemp(folder.data()) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  TcpWorldOptions options;
  options.rendezvous_file = folder + "/rendezvous";
  options.timeout = absl::Seconds(120);
  std::vector<std::thread> followers;
  for (int r = 1; r < n; ++r) {
    followers.emplace_back(FollowerRank, r, n, options, count);
  }
  absl::StatusOr<std::unique_ptr<Communicator>> world =
      ConnectTcpWorld(0, n, options);
  if (!world.ok()) {
    state.SkipWithError(std::string(world.status().message()).c_str());
    for (std::thread& t : followers) t.join();
    return;
  }
  std::vector<float> buf(count, 1.0f);
  const Tensor t{buf.data(), DType::kF32, count};
  double total_s = 0;
  for (auto _ : state) {
    int32_t go = 1;
    if (!(*world)->Broadcast(Tensor{&go, DType::kI32, 1}, 0).ok()) break;
    const Clock::time_point start = Clock::now();
    absl::Status s = (*world)->AllReduce(t, t, ReduceOp::kSum);
    const double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
    state.SetIterationTime(seconds);
    total_s += seconds;
  }
  int32_t stop = 0;
  (void)(*world)->Broadcast(Tensor{&stop, DType::kI32, 1}, 0);
  for (std::thread& th : followers) th.join();
  world->reset();
  ::rmdir(folder.c_str());
  const double moved = static_cast<double>(bytes) * state.iterations();
  if (total_s > 0) {
    const double algbw = moved / total_s / 1e9;
    state.counters["algbw_GBps"] = algbw;
    state.counters["busbw_GBps"] = algbw * 2.0 * (n - 1) / n;
  }
  state.SetBytesProcessed(static_cast<int64_t>(moved));
}

BENCHMARK(BM_TcpAllReduce)
    ->ArgNames({"ranks", "bytes"})
    ->Args({4, 64 << 20})
    ->Args({2, 64 << 20})
    ->Args({8, 64 << 20})
    ->Args({4, 1 << 20})
    ->Args({4, 4 << 10})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::executor

BENCHMARK_MAIN();
