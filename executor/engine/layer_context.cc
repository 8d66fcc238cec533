#include "executor/engine/layer_context.h"

#include "core/status_macros.h"

namespace tessera::executor {

std::vector<int32_t> ContextParallelPositions(int64_t seq_len, int64_t cp,
                                              int64_t rank) {
  std::vector<int32_t> pos;
  pos.reserve(seq_len / cp);
  if (cp == 1) {
    for (int64_t i = 0; i < seq_len; ++i)
      pos.push_back(static_cast<int32_t>(i));
    return pos;
  }
  const int64_t chunk = seq_len / (2 * cp);
  for (int64_t c : {rank, 2 * cp - 1 - rank}) {
    for (int64_t i = 0; i < chunk; ++i) {
      pos.push_back(static_cast<int32_t>(c * chunk + i));
    }
  }
  return pos;
}

absl::Status InitPositions(LayerContext& ctx, int64_t micro_batch) {
  const int64_t cp = ctx.layout->cp;
  ctx.cp_positions.clear();
  for (int64_t r = 0; r < cp; ++r) {
    const std::vector<int32_t> pos =
        ContextParallelPositions(ctx.seq_len, cp, r);
    TESSERA_ASSIGN_OR_RETURN(
        DeviceBuffer buf,
        ctx.backend->Allocate(ctx.seq_local, DType::kI32, "positions"));
    ctx.backend->CopyFromHost(pos.data(), buf.view());
    ctx.cp_positions.push_back(std::move(buf));
  }
  const std::vector<int32_t> mine =
      ContextParallelPositions(ctx.seq_len, cp, ctx.groups->coords.cp);
  std::vector<int32_t> tiled;
  tiled.reserve(ctx.tokens);
  for (int64_t b = 0; b < micro_batch; ++b) {
    tiled.insert(tiled.end(), mine.begin(), mine.end());
  }
  TESSERA_ASSIGN_OR_RETURN(
      ctx.token_positions,
      ctx.backend->Allocate(ctx.tokens, DType::kI32, "token positions"));
  ctx.backend->CopyFromHost(tiled.data(), ctx.token_positions.view());
  return absl::OkStatus();
}

}  // namespace tessera::executor
