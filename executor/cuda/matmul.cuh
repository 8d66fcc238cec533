// GEMMs through cuBLASLt for the CUDA backend: bf16 A and B, bf16 or f32 C/D
// with beta (weight gradients accumulate into f32 with beta = 1), f32 compute
// (CUBLAS_COMPUTE_32F). The row-major problem is mapped to cuBLASLt's
// column-major one as gemm_layout.h states (operands swapped, m and n
// exchanged). The algorithm comes from cuBLASLt's heuristic, asked once per
// problem (shape, transposes, C type, operand alignments) and cached with its
// descriptors; it may use the workspace the backend hands over (32 MiB by
// default, what Hopper's fastest kernels want).
//
// Epilogues: the backend contract has no bias or activation next to a GEMM
// (Llama's linears have no bias; the residual add sits after a tensor-
// parallel reduction), so the only fusion that pays here is beta: gradient
// accumulation in the GEMM itself.
//
// defines: CublasLtMatmul
//
//   CublasLtMatmul mm;
//   TESSERA_RETURN_IF_ERROR(mm.Init(workspace, workspace_bytes));
//   TESSERA_RETURN_IF_ERROR(mm.Run(false, true, m, n, k, 1.0f, x, w, 0.0f,
//                                  y, CUDA_R_16BF, stream));
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "executor/cuda/cuda_status.h"
#include "executor/cuda/gemm_layout.h"

namespace tessera::executor::cuda {

class CublasLtMatmul {
 public:
  CublasLtMatmul() = default;
  CublasLtMatmul(const CublasLtMatmul&) = delete;
  CublasLtMatmul& operator=(const CublasLtMatmul&) = delete;
  ~CublasLtMatmul() {
    for (auto& [key, plan] : plans_) plan.Destroy();
    if (handle_ != nullptr) cublasLtDestroy(handle_);
  }

  // Creates the handle. `workspace` (device memory, not owned) holds
  // `workspace_bytes`.
  absl::Status Init(void* workspace, size_t workspace_bytes) {
    workspace_ = workspace;
    workspace_bytes_ = workspace_bytes;
    TESSERA_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&handle_));
    return absl::OkStatus();
  }

  // Row-major c[m,n] = alpha op(a)[m,k] op(b)[k,n] + beta c; a and b bf16,
  // c of c_type (CUDA_R_16BF or CUDA_R_32F). m, n, k positive.
  absl::Status Run(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                   float alpha, const void* a, const void* b, float beta,
                   void* c, cudaDataType_t c_type, cudaStream_t stream) {
    const ColumnMajorGemm g = ColumnMajorGemmFor(trans_a, trans_b, m, n, k);
    const Key key{trans_a,
                  trans_b,
                  m,
                  n,
                  k,
                  static_cast<int>(c_type),
                  AlignmentBytes(b),
                  AlignmentBytes(a),
                  AlignmentBytes(c)};
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      Plan plan;
      absl::Status s =
          plan.Create(handle_, g, c_type, std::get<6>(key), std::get<7>(key),
                      std::get<8>(key), workspace_bytes_);
      if (!s.ok()) {
        plan.Destroy();
        return absl::Status(
            s.code(),
            absl::StrCat("GEMM m=", m, " n=", n, " k=", k, " trans_a=", trans_a,
                         " trans_b=", trans_b, ": ", s.message()));
      }
      it = plans_.emplace(key, plan).first;
    }
    const Plan& plan = it->second;
    // cuBLASLt's first operand is the row-major b, its second the row-major
    // a; C and D are the same buffer.
    TESSERA_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(
        handle_, plan.desc, &alpha, b, plan.first, a, plan.second, &beta, c,
        plan.c, c, plan.c, &plan.algo, workspace_, workspace_bytes_, stream));
    return absl::OkStatus();
  }

 private:
  // trans_a, trans_b, m, n, k, C type, alignments of b, a, c.
  using Key =
      std::tuple<bool, bool, int64_t, int64_t, int64_t, int, int, int, int>;

  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t first = nullptr, second = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};

    absl::Status Create(cublasLtHandle_t handle, const ColumnMajorGemm& g,
                        cudaDataType_t c_type, int align_first,
                        int align_second, int align_c, size_t workspace_bytes) {
      TESSERA_CUBLAS_RETURN_IF_ERROR(
          cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      const cublasOperation_t op_first =
          g.first.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
      const cublasOperation_t op_second =
          g.second.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
      TESSERA_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
          desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)));
      TESSERA_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
          desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)));
      TESSERA_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(
          &first, CUDA_R_16BF, g.first.rows, g.first.cols, g.first.ld));
      TESSERA_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(
          &second, CUDA_R_16BF, g.second.rows, g.second.cols, g.second.ld));
      TESSERA_CUBLAS_RETURN_IF_ERROR(
          cublasLtMatrixLayoutCreate(&c, c_type, g.rows_c, g.cols_c, g.ldc));

      cublasLtMatmulPreference_t pref = nullptr;
      TESSERA_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
      const uint64_t max_workspace = workspace_bytes;
      const uint32_t alignments[4] = {static_cast<uint32_t>(align_first),
                                      static_cast<uint32_t>(align_second),
                                      static_cast<uint32_t>(align_c),
                                      static_cast<uint32_t>(align_c)};
      cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
          pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
          sizeof(max_workspace));
      const cublasLtMatmulPreferenceAttributes_t align_attrs[4] = {
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
      for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; ++i) {
        st = cublasLtMatmulPreferenceSetAttribute(
            pref, align_attrs[i], &alignments[i], sizeof(alignments[i]));
      }
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      if (st == CUBLAS_STATUS_SUCCESS) {
        st = cublasLtMatmulAlgoGetHeuristic(handle, desc, first, second, c, c,
                                            pref, 1, &result, &found);
      }
      cublasLtMatmulPreferenceDestroy(pref);
      TESSERA_CUBLAS_RETURN_IF_ERROR(st);
      if (found == 0) {
        return absl::InternalError(
            "cublasLtMatmulAlgoGetHeuristic found no algorithm");
      }
      algo = result.algo;
      return absl::OkStatus();
    }

    void Destroy() {
      if (c != nullptr) cublasLtMatrixLayoutDestroy(c);
      if (second != nullptr) cublasLtMatrixLayoutDestroy(second);
      if (first != nullptr) cublasLtMatrixLayoutDestroy(first);
      if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
      c = second = first = nullptr;
      desc = nullptr;
    }
  };

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, Plan> plans_;
};

}  // namespace tessera::executor::cuda
