// CUDA and cuBLASLt errors as statuses: the code a trial's status depends on
// (out of memory must become oom), and messages that name the call and the
// library's error string. The CUDA runtime's error strings need no device.
#include "executor/cuda/cuda_status.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera::executor::cuda {
namespace {

TEST(CudaStatusTest, CodesByError) {
  EXPECT_EQ(CudaErrorCode(cudaSuccess), absl::StatusCode::kOk);
  EXPECT_EQ(CudaErrorCode(cudaErrorMemoryAllocation),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CudaErrorCode(cudaErrorNoDevice),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CudaErrorCode(cudaErrorInsufficientDriver),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CudaErrorCode(cudaErrorInvalidValue),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CudaErrorCode(cudaErrorIllegalAddress),
            absl::StatusCode::kInternal);
}

TEST(CudaStatusTest, MessageNamesTheCallAndTheError) {
  EXPECT_TRUE(CudaCallStatus(cudaSuccess, "cudaMalloc").ok());
  const absl::Status s =
      CudaCallStatus(cudaErrorMemoryAllocation, "cudaMalloc(&p, 1 << 40)");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  const std::string m(s.message());
  EXPECT_NE(m.find("cudaMalloc(&p, 1 << 40)"), std::string::npos) << m;
  EXPECT_NE(m.find("out of memory"), std::string::npos) << m;
  EXPECT_NE(m.find("cudaErrorMemoryAllocation"), std::string::npos) << m;
}

absl::Status FailsWith(cudaError_t e) {
  TESSERA_CUDA_RETURN_IF_ERROR(e);
  return absl::OkStatus();
}

TEST(CudaStatusTest, ReturnIfErrorReturnsTheCallsStatus) {
  EXPECT_TRUE(FailsWith(cudaSuccess).ok());
  const absl::Status s = FailsWith(cudaErrorInvalidValue);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("cudaErrorInvalidValue"),
            std::string::npos)
      << s;
}

TEST(CudaStatusTest, CublasStatuses) {
  EXPECT_TRUE(CublasCallStatus(CUBLAS_STATUS_SUCCESS, "x").ok());
  const absl::Status oom =
      CublasCallStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtCreate(&h)");
  EXPECT_EQ(oom.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(oom.message()).find("cublasLtCreate(&h)"),
            std::string::npos);
  EXPECT_NE(std::string(oom.message()).find("CUBLAS_STATUS_ALLOC_FAILED"),
            std::string::npos)
      << oom;
  EXPECT_EQ(CublasCallStatus(CUBLAS_STATUS_INVALID_VALUE, "x").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CublasCallStatus(CUBLAS_STATUS_EXECUTION_FAILED, "x").code(),
            absl::StatusCode::kInternal);
}

TEST(CudaStatusDeathTest, CheckAbortsWithTheCallAndLine) {
  EXPECT_DEATH(TESSERA_CUDA_CHECK(cudaErrorLaunchFailure),
               "cuda_status_test.cc:[0-9]+: cudaErrorLaunchFailure: "
               "unspecified launch failure");
  EXPECT_DEATH(Die("CudaBackend::Gemm", "a is f32, expected bf16"),
               "CudaBackend::Gemm: a is f32, expected bf16");
}

}  // namespace
}  // namespace tessera::executor::cuda
