// What every layer of one rank needs to run a micro-batch: the backend, the
// rank's groups, the model and layout, and the token geometry.
//
// Token geometry of a micro-batch on one rank:
//   seq_local = seq_len / cp       tokens of each sequence on this cp rank
//   tokens    = micro_batch * seq_local   rows seen by attention and the MLP
//   rows      = tokens / tp with sequence parallelism, else tokens: the rows
//               of the residual stream (norms, residual adds, pipeline sends)
// Rows are ordered (sequence in micro-batch, position); with sequence
// parallelism tp rank r holds rows [r * rows, (r + 1) * rows).
#pragma once

#include <cstdint>
#include <vector>

#include "core/layout.h"
#include "core/model.h"
#include "executor/backend.h"
#include "executor/engine/parallel_groups.h"

namespace tessera::executor {

struct LayerContext {
  Backend* backend = nullptr;
  ParallelGroups* groups = nullptr;
  const ModelConfig* model = nullptr;
  const Layout* layout = nullptr;
  int64_t seq_len = 0;
  int64_t seq_local = 0;
  int64_t tokens = 0;
  int64_t rows = 0;
  // i32 [seq_local] global positions of each cp rank's tokens (index = cp
  // rank): ring attention masks blocks received from other ranks by them.
  std::vector<DeviceBuffer> cp_positions;
  // i32 [tokens]: this rank's positions repeated per sequence (for RoPE).
  DeviceBuffer token_positions;

  int64_t hidden() const { return model->hidden; }
  int64_t head_dim() const { return model->head_dim(); }
  int64_t local_heads() const { return model->heads / layout->tp; }
  int64_t local_kv_heads() const { return model->kv_heads / layout->tp; }
  int64_t local_ffn() const { return model->ffn_hidden / layout->tp; }
  int64_t local_vocab() const { return model->vocab / layout->tp; }
  const Tensor& my_positions() const {
    return cp_positions[groups->coords.cp].view();
  }
};

// Global positions of cp rank `rank`'s tokens of a sequence of seq_len split
// over cp ranks with causal load balancing: the sequence is cut into 2*cp
// chunks and rank r holds chunks r and 2*cp-1-r (Liu et al. 2023, ring
// attention; Megatron-LM's context parallelism). cp == 1: 0..seq_len-1.
std::vector<int32_t> ContextParallelPositions(int64_t seq_len, int64_t cp,
                                              int64_t rank);

// Allocates and fills the position tables of `ctx` (all but the pointers and
// sizes, which the caller sets first).
absl::Status InitPositions(LayerContext& ctx, int64_t micro_batch);

}  // namespace tessera::executor
