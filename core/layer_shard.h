// How one transformer layer's work is split onto one GPU: the tensor-parallel
// degree (with or without sequence parallelism), the context-parallel degree,
// and the micro-batch of sequences it processes. The FLOP, activation, compute
// and communication models all take it.
//
//   LayerShard shard{.tp = 8, .sp = true, .cp = 2, .micro_batch = 1,
//                    .seq_len = 8192};
//   double tokens = shard.local_tokens();  // 1 * 8192 / 2
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "core/workload.h"

namespace tessera {

struct LayerShard {
  int64_t tp = 1;
  bool sp = false;
  int64_t cp = 1;
  int64_t micro_batch = 1;  // sequences
  int64_t seq_len = 1;      // tokens per whole sequence (before cp splits it)
  Precision precision = Precision::kBf16;  // of the linear layers' GEMMs

  // Tokens of the micro-batch on this GPU's context-parallel rank.
  double local_tokens() const {
    return static_cast<double>(micro_batch) * seq_len / cp;
  }

  static LayerShard Of(const Layout& layout, const TrainingConfig& training) {
    return LayerShard{layout.tp,          layout.sp,
                      layout.cp,          layout.micro_batch,
                      training.seq_len,   training.precision};
  }
};

}  // namespace tessera
