// Hundreds of mixed operations on 8 ranks over the world and its tp/dp
// splits, on every Communicator implementation, every result checked against
// a hand computation.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"
#include "tests/executor/comm/communicators.h"

namespace tessera::executor {
namespace {

using testing::HostBuffer;
using testing::Input;
using testing::Reduced;

constexpr int kRanks = 8;
constexpr int kSteps = 600;

// One step: an operation on one group, the same on every rank (all ranks
// draw from the same seed).
absl::Status Step(int step, std::mt19937& plan, Communicator& world,
                  Communicator& tp, Communicator& dp) {
  Communicator* groups[] = {&world, &tp, &dp};
  Communicator& g = *groups[plan() % 3];
  const int64_t count = 1 + plan() % 300;
  const DType dtype = testing::kAllDTypes[plan() % 3];
  const ReduceOp op = testing::kAllOps[plan() % 2];
  const int kind = static_cast<int>(plan() % 6);
  const int n = g.size(), rank = g.rank();
  const std::string what =
      absl::StrCat("step ", step, " kind ", kind, " ",
                   testing::Describe(n, count, dtype, op, false));
  // Shift the inputs by the step so that stale data cannot pass.
  auto input = [&](int r, int64_t i) { return Input(r, i + step, dtype); };
  switch (kind) {
    case 0: {  // AllReduce, in place
      HostBuffer buf(dtype, count);
      buf.Fill([&](int64_t i) { return input(rank, i); });
      TESSERA_RETURN_IF_ERROR(g.AllReduce(buf.view(), buf.view(), op));
      std::vector<double> want(count);
      for (int64_t i = 0; i < count; ++i) {
        want[i] = Reduced(n, i + step, dtype, op);
      }
      return buf.Expect(want, what);
    }
    case 1: {  // AllGather
      HostBuffer send(dtype, count), recv(dtype, n * count);
      send.Fill([&](int64_t i) { return input(rank, i); });
      TESSERA_RETURN_IF_ERROR(g.AllGather(send.view(), recv.view()));
      std::vector<double> want(n * count);
      for (int64_t i = 0; i < n * count; ++i) {
        want[i] = input(i / count, i % count);
      }
      return recv.Expect(want, what);
    }
    case 2: {  // ReduceScatter
      HostBuffer send(dtype, n * count), recv(dtype, count);
      send.Fill([&](int64_t i) { return input(rank, i); });
      TESSERA_RETURN_IF_ERROR(g.ReduceScatter(send.view(), recv.view(), op));
      std::vector<double> want(count);
      for (int64_t i = 0; i < count; ++i) {
        want[i] = Reduced(n, rank * count + i + step, dtype, op);
      }
      return recv.Expect(want, what);
    }
    case 3: {  // Broadcast from a drawn root
      const int root = static_cast<int>(plan() % n);
      HostBuffer buf(dtype, count);
      buf.Fill([&](int64_t i) { return input(rank, i); });
      TESSERA_RETURN_IF_ERROR(g.Broadcast(buf.view(), root));
      std::vector<double> want(count);
      for (int64_t i = 0; i < count; ++i) want[i] = input(root, i);
      return buf.Expect(want, what);
    }
    case 4: {  // ring exchange, send first
      HostBuffer out(dtype, count), in(dtype, count);
      out.Fill([&](int64_t i) { return input(rank, i); });
      const int prev = (rank + n - 1) % n;
      TESSERA_RETURN_IF_ERROR(g.Send(out.view(), (rank + 1) % n));
      TESSERA_RETURN_IF_ERROR(g.Recv(in.view(), prev));
      std::vector<double> want(count);
      for (int64_t i = 0; i < count; ++i) want[i] = input(prev, i);
      return in.Expect(want, what);
    }
    default:
      return g.Barrier();
  }
}

class StressTest : public ::testing::TestWithParam<testing::CommKind> {};

TEST_P(StressTest, MixedOperationsOnEightRanks) {
  testing::RunAllOk(
      GetParam(), kRanks, [](int rank, Communicator& world) -> absl::Status {
        TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> tp,
                                 world.Split(rank / 4, rank));
        TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> dp,
                                 world.Split(rank % 4, rank));
        std::mt19937 plan(2024);  // the same plan on every rank
        for (int step = 0; step < kSteps; ++step) {
          TESSERA_RETURN_IF_ERROR(Step(step, plan, world, *tp, *dp));
        }
        return absl::OkStatus();
      });
}

INSTANTIATE_TEST_SUITE_P(, StressTest, ::testing::ValuesIn(testing::kCommKinds),
                         testing::CommKindParamName);

}  // namespace
}  // namespace tessera::executor
