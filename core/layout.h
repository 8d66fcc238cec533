// One point of the parallel-layout search space, its `key=value` syntax, and
// the rules that make it valid for a world size, a global batch and a model.
//
//   TESSERA_ASSIGN_OR_RETURN(Layout l, ParseLayout("tp=2,pp=2,zero=1"));
//   TESSERA_ASSIGN_OR_RETURN(l, ResolveLayout(l, /*world_size=*/16,
//                                             /*global_batch=*/64));
//   // l.dp == 4, l.grad_accum == 16
//   TESSERA_RETURN_IF_ERROR(CheckLayoutFitsModel(l, model, /*seq_len=*/4096));
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model.h"

namespace tessera {

// Activation recomputation during the backward pass.
enum class Recompute {
  kNone,       // keep every activation
  kSelective,  // recompute the attention core (softmax(QK^T)V) only
  kFull,       // keep each layer's input only; recompute the whole layer
};

absl::string_view RecomputeName(Recompute r);
absl::StatusOr<Recompute> ParseRecompute(absl::string_view text);

// The knobs of the layout table (docs/architecture.md "A layout"). dp, grad_accum and shard_group are
// derived by ResolveLayout when left at 0.
struct Layout {
  int64_t tp = 1;    // tensor-parallel degree (Megatron column/row split)
  bool sp = false;   // sequence parallelism with tp
  int64_t pp = 1;    // pipeline stages
  int64_t vpp = 1;   // virtual stages per pipeline rank (interleaved 1F1B)
  int64_t cp = 1;    // context-parallel degree (ring attention)
  int64_t dp = 0;    // data-parallel degree; 0 = world / (tp*pp*cp)
  int64_t zero = 0;  // 0 DDP, 1 optimizer, 2 +gradients, 3 +parameters
  int64_t shard_group = 0;  // HSDP: shard within groups of this many dp ranks;
                            // 0 = the whole dp group; 1 with zero 0
  int64_t micro_batch = 1;  // sequences per micro-batch per rank
  int64_t grad_accum = 0;   // micro-batches per step; 0 = derive
  Recompute recompute = Recompute::kNone;

  // Ranks that hold one data-parallel replica: tp * pp * cp.
  int64_t model_parallel() const { return tp * pp * cp; }
  int64_t world_size() const { return model_parallel() * dp; }
  // Data-parallel ranks that hold the same shard: dp / shard_group (dp with
  // zero 0, where nothing is sharded; 1 with plain ZeRO/FSDP).
  int64_t replicas() const { return shard_group > 0 ? dp / shard_group : 1; }

  bool operator==(const Layout&) const = default;
};

// Parses "tp=2,sp=1,pp=4,vpp=2,cp=1,zero=1,shard_group=8,micro_batch=1,
// grad_accum=8,recompute=selective". Fields may come in any order, each at most
// once; omitted ones keep their defaults; whitespace around tokens is ignored;
// sp takes 0/1/true/false; dp, grad_accum and shard_group take 0 for
// "derive". Errors name the field: "layout.tp: ...".
absl::StatusOr<Layout> ParseLayout(absl::string_view text);

// The canonical text of a layout, every field, in table order; ParseLayout of
// it gives the layout back.
std::string FormatLayout(const Layout& layout);

// Derives dp, grad_accum and shard_group for `world_size` GPUs and a global
// batch of `global_batch` sequences, and checks the rules that do not depend
// on the model: tp*pp*cp divides the world, the global batch is reachable
// exactly (micro_batch * dp * grad_accum), given dp/grad_accum agree, sp needs
// tp > 1, vpp > 1 needs pp > 1 and grad_accum divisible by pp, shard_group
// divides dp. Errors name the field and leave nothing changed.
absl::StatusOr<Layout> ResolveLayout(const Layout& layout, int64_t world_size,
                                     int64_t global_batch);

// Checks the rules that depend on the model and sequence length: tp divides
// heads, kv_heads, ffn_hidden and vocab; pp <= layers; pp*vpp <= layers, and
// divides them when vpp > 1 unless `allow_uneven_interleaving` (stacks that
// size each model chunk: Megatron-Core, torchtitan); `blocks_besides_layers`
// more when the stack's pipeline split gives blocks other than layers a
// chunk of their own (the embedding and the loss: a chunk may then hold no
// layer; costmodel/pipeline/stage_split.h); cp > 1 needs seq_len
// divisible by 2*cp (causal load balance); sp needs seq_len/cp divisible by
// tp.
absl::Status CheckLayoutFitsModel(const Layout& layout,
                                  const ModelConfig& model, int64_t seq_len,
                                  bool allow_uneven_interleaving = false,
                                  int64_t blocks_besides_layers = 0);

// The half-open range of layers [begin, end) of one model chunk.
struct LayerRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// Layers held by pipeline rank `stage` (0..pp-1) in its virtual chunk `chunk`
// (0..vpp-1). Model chunk m = chunk * pp + stage (Megatron's interleaved
// assignment) holds layers / (pp * vpp) layers; when that does not divide,
// every chunk holds ceil(layers / (pp * vpp)) but the first and last chunks
// of the model, then the second and the second-to-last, ..., one fewer, until
// the layers add up: the ends also hold the embedding and the output layer
// (Llama 3 405B: 126 layers on 16 stages, 7 on the first and last, 8 on the
// others; Dubey et al. 2024, Section 3.3.2). Needs pp * vpp <= layers.
LayerRange StageLayers(int64_t layers, int64_t pp, int64_t vpp, int64_t stage,
                       int64_t chunk);

// Layers of pipeline rank `stage` over all its vpp chunks: the sum of
// StageLayers(...).size() over the chunks, in constant time.
int64_t StageLayerCount(int64_t layers, int64_t pp, int64_t vpp,
                        int64_t stage);

}  // namespace tessera
