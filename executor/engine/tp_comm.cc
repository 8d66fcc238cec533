#include "executor/engine/tp_comm.h"

#include "core/status_macros.h"

namespace tessera::executor {

absl::StatusOr<Tensor> GatherRows(const LayerContext& ctx,
                                  const Tensor& rows_in,
                                  DeviceBuffer* storage) {
  if (!ctx.layout->sp) return rows_in;
  TESSERA_ASSIGN_OR_RETURN(
      *storage, ctx.backend->Allocate(ctx.tokens * ctx.hidden(), rows_in.dtype,
                                      "sp gathered rows"));
  TESSERA_RETURN_IF_ERROR(ctx.groups->tp->AllGather(rows_in, storage->view()));
  return storage->view();
}

absl::StatusOr<Tensor> ReduceRows(const LayerContext& ctx,
                                  const Tensor& partial,
                                  DeviceBuffer* storage) {
  Communicator& tp = *ctx.groups->tp;
  if (!ctx.layout->sp) {
    if (tp.size() > 1) {
      TESSERA_RETURN_IF_ERROR(tp.AllReduce(partial, partial, ReduceOp::kSum));
    }
    return partial;
  }
  TESSERA_ASSIGN_OR_RETURN(
      *storage, ctx.backend->Allocate(ctx.rows * ctx.hidden(), partial.dtype,
                                      "sp scattered rows"));
  TESSERA_RETURN_IF_ERROR(
      tp.ReduceScatter(partial, storage->view(), ReduceOp::kSum));
  return storage->view();
}

}  // namespace tessera::executor
