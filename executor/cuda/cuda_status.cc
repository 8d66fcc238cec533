#include "executor/cuda/cuda_status.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace tessera::executor::cuda {

absl::StatusCode CudaErrorCode(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return absl::StatusCode::kOk;
    case cudaErrorMemoryAllocation:
      return absl::StatusCode::kResourceExhausted;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return absl::StatusCode::kFailedPrecondition;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidPitchValue:
    case cudaErrorInvalidDevicePointer:
      return absl::StatusCode::kInvalidArgument;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status CudaCallStatus(cudaError_t error, absl::string_view call) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::Status(CudaErrorCode(error),
                      absl::StrCat(call, ": ", cudaGetErrorString(error), " (",
                                   cudaGetErrorName(error), ")"));
}

absl::Status CublasCallStatus(cublasStatus_t status, absl::string_view call) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  absl::StatusCode code = absl::StatusCode::kInternal;
  if (status == CUBLAS_STATUS_ALLOC_FAILED) {
    code = absl::StatusCode::kResourceExhausted;
  } else if (status == CUBLAS_STATUS_INVALID_VALUE ||
             status == CUBLAS_STATUS_NOT_SUPPORTED) {
    code = absl::StatusCode::kInvalidArgument;
  }
  return absl::Status(
      code, absl::StrCat(call, ": ", cublasLtGetStatusString(status), " (",
                         cublasLtGetStatusName(status), ")"));
}

void Die(absl::string_view op, absl::string_view message) {
  std::fprintf(stderr, "%.*s: %.*s\n", static_cast<int>(op.size()), op.data(),
               static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  std::abort();
}

void CheckCuda(cudaError_t error, absl::string_view call,
               absl::string_view where) {
  if (error == cudaSuccess) return;
  Die(where, CudaCallStatus(error, call).message());
}

void CheckCublas(cublasStatus_t status, absl::string_view call,
                 absl::string_view where) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  Die(where, CublasCallStatus(status, call).message());
}

}  // namespace tessera::executor::cuda
