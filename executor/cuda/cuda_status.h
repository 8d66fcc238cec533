// CUDA runtime and cuBLASLt errors as absl::Status values, naming the call
// and the library's own error string, and the fatal variant for the void
// kernel launchers of the Backend contract (a failed launch is a bug or a
// dead device, as an illegal address is).
//
//   TESSERA_CUDA_RETURN_IF_ERROR(cudaMallocAsync(&p, bytes, stream));
//   // -> RESOURCE_EXHAUSTED "cudaMallocAsync(&p, bytes, stream): out of
//   //    memory (cudaErrorMemoryAllocation)"
//   TESSERA_CUDA_CHECK(cudaStreamSynchronize(stream));  // aborts on error
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tessera::executor::cuda {

// The status code a CUDA runtime error stands for: out of memory is
// RESOURCE_EXHAUSTED (a trial's oom); no device or no usable driver is
// FAILED_PRECONDITION; a bad argument is INVALID_ARGUMENT; the rest INTERNAL.
absl::StatusCode CudaErrorCode(cudaError_t error);

// OK for cudaSuccess; otherwise "<call>: <error string> (<error name>)" with
// CudaErrorCode's code.
absl::Status CudaCallStatus(cudaError_t error, absl::string_view call);

// OK for CUBLAS_STATUS_SUCCESS; otherwise "<call>: <status string>" with
// RESOURCE_EXHAUSTED for CUBLAS_STATUS_ALLOC_FAILED, INVALID_ARGUMENT for
// CUBLAS_STATUS_INVALID_VALUE / NOT_SUPPORTED, INTERNAL otherwise.
absl::Status CublasCallStatus(cublasStatus_t status, absl::string_view call);

// Prints "<where>: <call>: <error>" to stderr and aborts unless `error` is
// cudaSuccess.
void CheckCuda(cudaError_t error, absl::string_view call,
               absl::string_view where);
void CheckCublas(cublasStatus_t status, absl::string_view call,
                 absl::string_view where);

// Prints "<op>: <message>" to stderr and aborts (misuse of a kernel).
[[noreturn]] void Die(absl::string_view op, absl::string_view message);

}  // namespace tessera::executor::cuda

#define TESSERA_CUDA_STRINGIFY_INNER(x) #x
#define TESSERA_CUDA_STRINGIFY(x) TESSERA_CUDA_STRINGIFY_INNER(x)
#define TESSERA_CUDA_WHERE __FILE__ ":" TESSERA_CUDA_STRINGIFY(__LINE__)

// Returns the call's error as a Status from the enclosing function.
#define TESSERA_CUDA_RETURN_IF_ERROR(call)                        \
  do {                                                            \
    const ::absl::Status tessera_cuda_status_ =                   \
        ::tessera::executor::cuda::CudaCallStatus((call), #call); \
    if (!tessera_cuda_status_.ok()) return tessera_cuda_status_;  \
  } while (false)

#define TESSERA_CUBLAS_RETURN_IF_ERROR(call)                         \
  do {                                                               \
    const ::absl::Status tessera_cublas_status_ =                    \
        ::tessera::executor::cuda::CublasCallStatus((call), #call);  \
    if (!tessera_cublas_status_.ok()) return tessera_cublas_status_; \
  } while (false)

// Aborts with the call, its error and the source line when it fails.
#define TESSERA_CUDA_CHECK(call) \
  ::tessera::executor::cuda::CheckCuda((call), #call, TESSERA_CUDA_WHERE)
#define TESSERA_CUBLAS_CHECK(call) \
  ::tessera::executor::cuda::CheckCublas((call), #call, TESSERA_CUDA_WHERE)
