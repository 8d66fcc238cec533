// Megatron's tensor-parallel conjugate operators (Shoeybi et al. 2019;
// with sequence parallelism, Korthikanti et al. 2022), on the residual-stream
// rows of layer_context.h:
//   GatherRows:  before a column-parallel GEMM. Without SP the input is already
//                whole (identity); with SP, all-gather the rows over tp.
//   ReduceRows:  after a row-parallel GEMM (and for the input gradient of a
//                column-parallel one). Without SP all-reduce the partial sums
//                in place; with SP reduce-scatter them into the rank's rows.
#pragma once

#include "absl/status/statusor.h"
#include "executor/engine/layer_context.h"

namespace tessera::executor {

// Returns the whole [tokens, h] rows for `rows_in` ([rows, h]): `rows_in`
// itself without SP, else a gathered copy held by *storage.
absl::StatusOr<Tensor> GatherRows(const LayerContext& ctx,
                                  const Tensor& rows_in, DeviceBuffer* storage);

// Reduces the partial sums `partial` ([tokens, h]) over tp. Returns the
// result as [rows, h]: `partial` itself (all-reduced) without SP, else a
// reduce-scattered buffer held by *storage.
absl::StatusOr<Tensor> ReduceRows(const LayerContext& ctx,
                                  const Tensor& partial, DeviceBuffer* storage);

}  // namespace tessera::executor
