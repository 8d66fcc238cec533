// Where a rank sits in the layout's grid and the communicators of its groups.
// Rank order: tensor-parallel fastest, then context, then data, then pipeline
// (Megatron's tp-cp-dp-pp order), so a tp group is contiguous in a node.
//
//   TESSERA_ASSIGN_OR_RETURN(ParallelGroups g,
//                            ParallelGroups::Create(world, layout));
//   g.tp->AllReduce(partial, partial, ReduceOp::kSum);
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "executor/comm/communicator.h"

namespace tessera::executor {

struct RankCoords {
  int tp = 0;
  int cp = 0;
  int dp = 0;
  int pp = 0;
};

// The coordinates of global `rank` under a resolved layout, and back.
RankCoords CoordsOf(int rank, const Layout& layout);
int RankOf(const RankCoords& coords, const Layout& layout);

// One rank's groups. Every group's rank equals the coordinate it varies (tp
// group rank == coords.tp, pp group rank == coords.pp, ...).
struct ParallelGroups {
  RankCoords coords;
  Communicator* world = nullptr;     // not owned
  std::unique_ptr<Communicator> tp;  // same cp, dp, pp
  std::unique_ptr<Communicator> cp;  // same tp, dp, pp
  std::unique_ptr<Communicator> dp;  // same tp, cp, pp
  std::unique_ptr<Communicator> pp;  // same tp, cp, dp: activations
  // The same ranks as pp, for gradients flowing back: a second communicator
  // keeps forward and backward messages in separate FIFOs, so the schedule
  // can interleave them freely (interleaved 1F1B with pp == 2 sends both
  // kinds between the same two ranks).
  std::unique_ptr<Communicator> pp_backward;
  // Ranks holding the same parameters (same tp, pp): gradients are reduced
  // over these dp*cp ranks. Rank within = cp + cp_size * dp.
  std::unique_ptr<Communicator> grad;
  // ZeRO/HSDP: the shard group (shard_group dp ranks x all cp ranks) and the
  // replica group (the same shard position in every shard group).
  std::unique_ptr<Communicator> shard;
  std::unique_ptr<Communicator> replica;

  // Splits `world` (size == layout.world_size(), collective over it).
  static absl::StatusOr<ParallelGroups> Create(Communicator& world,
                                               const Layout& layout);
};

}  // namespace tessera::executor
