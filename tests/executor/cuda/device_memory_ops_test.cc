// DeviceMemoryOps on a GPU (skipped without one): reductions bit-equal to
// HostMemoryOps' on the same inputs for every dtype and op (bf16 rounded
// once, i32 sums wrapping), in place, NaN winning a max, copies and
// staging buffers; then collectives of the in-process communicator over
// device memory, ranks as threads on one GPU, against hand results.
#include "executor/cuda/device_memory_ops.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "executor/comm/memory_ops.h"
#include "executor/comm/run_ranks.h"
#include "executor/cuda/cuda_backend.h"
#include "executor/cuda/device_sync_communicator.h"
#include "gtest/gtest.h"
#include "tests/executor/cuda/cuda_test_util.h"

namespace tessera::executor {
namespace {

using cuda_test::Download;
using cuda_test::Upload;

// Raw bytes to and from the device.
void* ToDevice(MemoryOps& ops, const void* host, size_t bytes) {
  absl::StatusOr<void*> p = ops.Allocate(bytes);
  EXPECT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(ops.Copy(*p, host, bytes).ok());  // cudaMemcpyDefault: from host
  return *p;
}

template <typename T>
std::vector<T> FromDevice(MemoryOps& ops, const void* device, size_t count) {
  std::vector<T> host(count);
  EXPECT_TRUE(ops.Copy(host.data(), device, count * sizeof(T)).ok());
  return host;
}

template <typename T>
void ExpectReduceMatchesHost(DeviceMemoryOps& dev, DType dtype,
                             const std::vector<std::vector<T>>& inputs,
                             ReduceOp op) {
  const size_t n = inputs[0].size();
  std::vector<const void*> host_srcs, dev_srcs;
  for (const std::vector<T>& in : inputs) {
    host_srcs.push_back(in.data());
    dev_srcs.push_back(ToDevice(dev, in.data(), n * sizeof(T)));
  }
  std::vector<T> want(n);
  ASSERT_TRUE(
      HostMemoryOps::Get().Reduce(host_srcs, want.data(), n, dtype, op).ok());
  void* out = ToDevice(dev, inputs[0].data(), n * sizeof(T));
  ASSERT_TRUE(dev.Reduce(dev_srcs, out, n, dtype, op).ok());
  const std::vector<T> got = FromDevice<T>(dev, out, n);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(T)), 0)
      << DTypeName(dtype) << (op == ReduceOp::kSum ? " sum" : " max");
  // In place: the destination is the first source.
  ASSERT_TRUE(
      dev.Reduce(dev_srcs, const_cast<void*>(dev_srcs[0]), n, dtype, op).ok());
  const std::vector<T> in_place = FromDevice<T>(dev, dev_srcs[0], n);
  EXPECT_EQ(std::memcmp(in_place.data(), want.data(), n * sizeof(T)), 0);
  for (const void* p : dev_srcs) dev.Free(const_cast<void*>(p));
  dev.Free(out);
}

TEST(DeviceMemoryOpsTest, ReductionsEqualTheHostsBitForBit) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  absl::StatusOr<std::shared_ptr<DeviceMemoryOps>> dev =
      DeviceMemoryOps::Create(0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  const size_t n = 5003;
  std::vector<std::vector<float>> f(3, std::vector<float>(n));
  std::vector<std::vector<uint16_t>> b(3, std::vector<uint16_t>(n));
  std::vector<std::vector<int32_t>> i(3, std::vector<int32_t>(n));
  for (int r = 0; r < 3; ++r) {
    for (size_t e = 0; e < n; ++e) {
      f[r][e] = std::sin(0.1f * e + r) * (1 + r * 1e-3f);
      b[r][e] = FloatToBf16(std::cos(0.07f * e - r));
      i[r][e] = static_cast<int32_t>(e * 2654435761u + r * 97u);  // wraps
    }
  }
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
    ExpectReduceMatchesHost(**dev, DType::kF32, f, op);
    ExpectReduceMatchesHost(**dev, DType::kBF16, b, op);
    ExpectReduceMatchesHost(**dev, DType::kI32, i, op);
  }
}

TEST(DeviceMemoryOpsTest, NanWinsAMax) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  auto dev = *DeviceMemoryOps::Create(0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::vector<float>> in = {
      {1, 2, 3}, {nan, 5, 0}, {0, nan, 9}};
  std::vector<const void*> srcs;
  for (const auto& v : in) srcs.push_back(ToDevice(*dev, v.data(), 12));
  void* out = ToDevice(*dev, in[0].data(), 12);
  ASSERT_TRUE(dev->Reduce(srcs, out, 3, DType::kF32, ReduceOp::kMax).ok());
  const std::vector<float> got = FromDevice<float>(*dev, out, 3);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_EQ(got[2], 9.0f);
  for (const void* p : srcs) dev->Free(const_cast<void*>(p));
  dev->Free(out);
}

TEST(DeviceMemoryOpsTest, TooManySourcesIsAnError) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  auto dev = *DeviceMemoryOps::Create(0);
  std::vector<const void*> srcs(DeviceMemoryOps::kMaxSources + 1, nullptr);
  EXPECT_EQ(dev->Reduce(srcs, nullptr, 1, DType::kF32, ReduceOp::kSum).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DeviceMemoryOps::Create(1000).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// The in-process communicator over device memory: each rank a thread with
// its own CUDA backend on GPU 0.
TEST(DeviceMemoryOpsTest, InProcessCollectivesOnOneGpu) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  constexpr int kRanks = 4;
  InProcessOptions options;
  options.memory_ops = *DeviceMemoryOps::Create(0);
  const std::vector<absl::Status> statuses = RunRanks(
      kRanks,
      [&](int rank, Communicator& world) -> absl::Status {
        auto backend = CudaBackend::Create({.device = 0});
        if (!backend.ok()) return backend.status();
        CudaBackend& gpu = **backend;
        DeviceSyncCommunicator comm(&world, &gpu);
        // AllReduce (bf16, in place) of values written by a kernel just
        // before: the decorator must wait for it.
        DeviceBuffer x = Upload(gpu, std::vector<float>(6, 1.0f), DType::kBF16);
        gpu.Scale(x.view(), 6, static_cast<float>(rank + 1));
        if (absl::Status s = comm.AllReduce(x.view(), x.view(), ReduceOp::kSum);
            !s.ok()) {
          return s;
        }
        for (float v : Download(gpu, x.view())) {
          if (v != 10.0f) return absl::InternalError("allreduce");
        }
        // AllGather f32 and ReduceScatter f32.
        DeviceBuffer mine =
            Upload(gpu, {float(rank), float(10 * rank)}, DType::kF32);
        DeviceBuffer all =
            std::move(*gpu.Allocate(2 * kRanks, DType::kF32, "all"));
        if (absl::Status s = comm.AllGather(mine.view(), all.view()); !s.ok()) {
          return s;
        }
        const std::vector<float> gathered = Download(gpu, all.view());
        for (int r = 0; r < kRanks; ++r) {
          if (gathered[2 * r] != r || gathered[2 * r + 1] != 10 * r) {
            return absl::InternalError("allgather");
          }
        }
        DeviceBuffer part = std::move(*gpu.Allocate(2, DType::kF32, "part"));
        if (absl::Status s =
                comm.ReduceScatter(all.view(), part.view(), ReduceOp::kSum);
            !s.ok()) {
          return s;
        }
        const std::vector<float> p = Download(gpu, part.view());
        // Block `rank` of every rank's (identical) gathered vector, x4.
        if (p[0] != 4.0f * rank || p[1] != 40.0f * rank) {
          return absl::InternalError("reducescatter");
        }
        // Send/Recv around a ring, grouped.
        DeviceBuffer in = std::move(*gpu.Allocate(2, DType::kF32, "in"));
        if (absl::Status s = comm.GroupStart(); !s.ok()) return s;
        if (absl::Status s = comm.Send(mine.view(), (rank + 1) % kRanks);
            !s.ok()) {
          return s;
        }
        if (absl::Status s = comm.Recv(in.view(), (rank + kRanks - 1) % kRanks);
            !s.ok()) {
          return s;
        }
        if (absl::Status s = comm.GroupEnd(); !s.ok()) return s;
        const int from = (rank + kRanks - 1) % kRanks;
        if (Download(gpu, in.view())[1] != 10.0f * from) {
          return absl::InternalError("send/recv");
        }
        return comm.Barrier();
      },
      options);
  EXPECT_TRUE(FirstFailure(statuses).ok()) << FirstFailure(statuses);
}

}  // namespace
}  // namespace tessera::executor
