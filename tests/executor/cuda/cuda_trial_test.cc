// RunCudaTrial: without a device it is an `invalid` trial saying so (this
// runs on every machine that has no GPU); with one, tiny trials run end to
// end on one GPU, as thread ranks over device memory, as a one-rank NCCL
// world, and an allocation past the memory limit is `oom` (the device's own
// out-of-memory is checked at the backend, cuda_backend_test.cc: a model too
// big for the device would first fill the host with its initial weights).
#include "executor/cuda/cuda_trial.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "executor/cuda/cuda_backend.h"
#include "gtest/gtest.h"
#include "tests/executor/cuda/cuda_test_util.h"

namespace tessera::executor {
namespace {

TrialConfig Tiny(const char* layout, int64_t ranks) {
  TrialConfig c;
  c.backend = "cuda";
  c.model = *ModelPreset("tiny");
  c.layout = *ParseLayout(layout);
  c.ranks = ranks;
  c.global_batch = 8;
  c.seq_len = 32;
  c.warmup_steps = 1;
  c.steps = 3;
  return c;
}

TEST(CudaTrialTest, NoDeviceIsAnInvalidTrialThatSaysSo) {
  std::string why;
  if (CudaDeviceAvailable(&why)) {
    GTEST_SKIP() << "a CUDA device is present: the GPU tests below cover it";
  }
  const TrialResult r = RunCudaTrial(Tiny("micro_batch=8", 1));
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_EQ(r.reason.rfind("no CUDA device was found (", 0), 0u) << r.reason;
  EXPECT_EQ(r.reason.back(), ')') << r.reason;
  EXPECT_NE(r.reason.find("cudaGetDeviceCount"), std::string::npos) << r.reason;
  EXPECT_EQ(r.backend, "cuda");
  EXPECT_EQ(r.ranks, 1);
  EXPECT_EQ(r.seq_len, 32);
  EXPECT_FALSE(r.watts_per_gpu.has_value());
}

void ExpectMeasured(const TrialResult& r, int64_t ranks) {
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.reason;
  EXPECT_EQ(r.steps, 3);
  ASSERT_EQ(r.loss.size(), 4u);
  for (double l : r.loss) EXPECT_TRUE(std::isfinite(l));
  EXPECT_NEAR(r.loss.front(), std::log(512.0), 0.3);  // ~uniform at start
  EXPECT_LT(r.loss.back(), r.loss.front());
  EXPECT_GT(r.step_time_s.median, 0);
  EXPECT_GT(r.tokens_per_s, 0);
  EXPECT_GT(r.peak_tflops, 0);
  EXPECT_FALSE(r.peak_tflops_source.empty());
  EXPECT_NEAR(r.mfu, r.tflops_per_gpu / r.peak_tflops, 1e-12);
  ASSERT_EQ(r.peak_memory_bytes.size(), static_cast<size_t>(ranks));
  for (int64_t b : r.peak_memory_bytes) EXPECT_GT(b, 0);
  EXPECT_GE(r.comm_s, 0);
  EXPECT_GE(r.exposed_comm_s, 0);
  EXPECT_LE(r.exposed_comm_s, r.step_time_s.median);
  EXPECT_NE(r.device.find("NVIDIA"), std::string::npos) << r.device;
  // Power: measured (plausible) or absent, never zero or negative.
  if (r.watts_per_gpu.has_value()) {
    EXPECT_GT(*r.watts_per_gpu, 10);
    EXPECT_LT(*r.watts_per_gpu, 2000);
    ASSERT_TRUE(r.tokens_per_joule.has_value());
    EXPECT_GT(*r.tokens_per_joule, 0);
  }
}

TEST(CudaTrialGpuTest, OneRankOnOneGpu) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  ExpectMeasured(RunCudaTrial(Tiny("micro_batch=4", 1)), 1);
}

TEST(CudaTrialGpuTest, ThreadRanksOnOneGpu) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  const TrialResult r = RunCudaTrial(Tiny("tp=2,pp=2,zero=1,micro_batch=1", 8));
  ExpectMeasured(r, 8);
  EXPECT_EQ(r.layout.dp, 2);
  EXPECT_GT(r.comm_s, 0);
}

TEST(CudaTrialGpuTest, MemoryLimitIsOom) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  TrialConfig c = Tiny("tp=2", 2);
  c.memory_limit_bytes = 1 << 20;  // 1 MiB: not even the weights fit
  const TrialResult r = RunCudaTrial(c);
  EXPECT_EQ(r.status, TrialStatus::kOom) << r.reason;
  EXPECT_NE(r.reason.find("limit"), std::string::npos) << r.reason;
}

TEST(CudaTrialGpuTest, OneProcessRankOverNccl) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  TrialConfig c = Tiny("micro_batch=4", 1);
  c.process_rank = 0;
  c.rendezvous_file = (std::filesystem::temp_directory_path() /
                       ("tessera_cuda_trial_" + std::to_string(::getpid())))
                          .string();
  const TrialResult r = RunCudaTrial(c);
#ifdef TESSERA_HAVE_NCCL
  ExpectMeasured(r, 1);
  EXPECT_NE(r.device.find("NCCL"), std::string::npos) << r.device;
  EXPECT_FALSE(
      std::filesystem::exists(c.rendezvous_file));  // rank 0 removed it
#else
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("NCCL"), std::string::npos) << r.reason;
#endif
}

}  // namespace
}  // namespace tessera::executor
