// The ends of the model: the vocabulary-parallel token embedding (first
// model chunk) and the output head (final RMSNorm, vocabulary-parallel
// projection and cross-entropy; last model chunk), Megatron-style: each tp
// rank holds vocab/tp rows and the softmax is combined with two all-reduces.
//
//   TESSERA_RETURN_IF_ERROR(EmbeddingForward(ctx, weights, tokens, x));
//   TESSERA_ASSIGN_OR_RETURN(double loss_sum,
//       OutputForward(ctx, weights, x, targets, grad_scale, &head));
#pragma once

#include "absl/status/statusor.h"
#include "executor/engine/layer_context.h"

namespace tessera::executor {

// tokens: i32 [tokens]; x: act [rows, h] (written).
absl::Status EmbeddingForward(const LayerContext& ctx, const Tensor& weights,
                              const Tensor& tokens, const Tensor& x);
// Adds the embedding gradient for dL/dx (d: act [rows, h]) into grads (f32).
absl::Status EmbeddingBackward(const LayerContext& ctx, const Tensor& grads,
                               const Tensor& tokens, const Tensor& d);

// What the output head keeps for its backward.
struct HeadSaved {
  DeviceBuffer rstd;  // f32 [rows]
  DeviceBuffer ln;    // act [rows, h]
  DeviceBuffer
      dlogits;  // act [tokens, vocab/tp]: grad_scale * (softmax - onehot)
};

// Runs the head on x ([rows, h]) against targets (i32 [tokens]) and returns
// the sum of the per-token cross-entropy losses of this rank's tokens (the
// same on every tp rank). Computes the logits' gradient for
// loss = sum * grad_scale at once and keeps it in *saved.
absl::StatusOr<double> OutputForward(const LayerContext& ctx,
                                     const Tensor& weights, const Tensor& x,
                                     const Tensor& targets, float grad_scale,
                                     HeadSaved* saved);
// Writes dL/dx into d (act [rows, h]) and adds the head's weight gradients
// into grads (f32); empties *saved.
absl::Status OutputBackward(const LayerContext& ctx, const Tensor& weights,
                            const Tensor& grads, const Tensor& x,
                            HeadSaved* saved, const Tensor& d);

}  // namespace tessera::executor
