#include "costmodel/comm/rank_placement.h"

namespace tessera::costmodel {

LayoutPlacement PlaceLayout(const Layout& l, int64_t gpus_per_node) {
  const int64_t sg = l.shard_group > 0 ? l.shard_group : 1;
  LayoutPlacement p;
  p.tp = PlaceGroup(l.tp, 1, gpus_per_node);
  p.cp = PlaceGroup(l.cp, l.tp, gpus_per_node);
  p.data = PlaceGroup(l.dp * l.cp, l.tp, gpus_per_node);
  p.shard = PlaceGroup(sg * l.cp, l.tp, gpus_per_node);
  p.replica = PlaceGroup(l.dp / sg, l.tp * l.cp * sg, gpus_per_node);
  p.pp = PlaceGroup(l.pp, l.tp * l.cp * l.dp, gpus_per_node);
  p.pp_crosses_nodes = p.pp.nodes > 1;
  return p;
}

}  // namespace tessera::costmodel
