// Where each parallel group of a layout sits on the cluster. Global ranks are
// ordered tp fastest, then cp, then dp, then pp (Megatron-LM's order: tensor
// parallel groups inside a node first, pipeline stages furthest apart), and
// fill nodes of gpus_per_node in order.
//
//   LayoutPlacement p = PlaceLayout(layout, /*gpus_per_node=*/8);
//   bool tp_spans_nodes = p.tp.nodes > 1;
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "costmodel/comm/collectives.h"

namespace tessera::costmodel {

struct LayoutPlacement {
  GroupPlacement tp;       // tp ranks, stride 1
  GroupPlacement cp;       // cp ranks, stride tp
  GroupPlacement data;     // gradient reduction: dp * cp ranks, stride tp
  GroupPlacement shard;    // ZeRO/FSDP sharding: shard_group * cp, stride tp
  GroupPlacement replica;  // HSDP replicas: dp / shard_group, stride
                           // tp * cp * shard_group
  GroupPlacement pp;       // pp ranks, stride tp * cp * dp
  bool pp_crosses_nodes = false;  // neighbouring stages on different nodes
};

// `layout` must be resolved (dp and shard_group set).
LayoutPlacement PlaceLayout(const Layout& layout, int64_t gpus_per_node);

}  // namespace tessera::costmodel
