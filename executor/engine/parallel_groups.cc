#include "executor/engine/parallel_groups.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tessera::executor {

RankCoords CoordsOf(int rank, const Layout& l) {
  RankCoords c;
  c.tp = static_cast<int>(rank % l.tp);
  rank /= static_cast<int>(l.tp);
  c.cp = static_cast<int>(rank % l.cp);
  rank /= static_cast<int>(l.cp);
  c.dp = static_cast<int>(rank % l.dp);
  c.pp = static_cast<int>(rank / l.dp);
  return c;
}

int RankOf(const RankCoords& c, const Layout& l) {
  return static_cast<int>(c.tp + l.tp * (c.cp + l.cp * (c.dp + l.dp * c.pp)));
}

absl::StatusOr<ParallelGroups> ParallelGroups::Create(Communicator& world,
                                                      const Layout& l) {
  if (world.size() != l.world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("layout: needs ", l.world_size(), " ranks, the world has ",
                     world.size()));
  }
  ParallelGroups g;
  g.world = &world;
  const RankCoords c = CoordsOf(world.rank(), l);
  g.coords = c;
  const int cp = static_cast<int>(l.cp);
  const int shard_dp = static_cast<int>(l.shard_group);
  // Colors: a number unique to the group, from the coordinates it keeps.
  TESSERA_ASSIGN_OR_RETURN(g.tp,
                           world.Split(RankOf({0, c.cp, c.dp, c.pp}, l), c.tp));
  TESSERA_ASSIGN_OR_RETURN(g.cp,
                           world.Split(RankOf({c.tp, 0, c.dp, c.pp}, l), c.cp));
  TESSERA_ASSIGN_OR_RETURN(g.dp,
                           world.Split(RankOf({c.tp, c.cp, 0, c.pp}, l), c.dp));
  TESSERA_ASSIGN_OR_RETURN(g.pp,
                           world.Split(RankOf({c.tp, c.cp, c.dp, 0}, l), c.pp));
  TESSERA_ASSIGN_OR_RETURN(g.pp_backward,
                           world.Split(RankOf({c.tp, c.cp, c.dp, 0}, l), c.pp));
  TESSERA_ASSIGN_OR_RETURN(
      g.grad, world.Split(RankOf({c.tp, 0, 0, c.pp}, l), c.cp + cp * c.dp));
  const int shard_index = c.dp / shard_dp;   // which shard group
  const int shard_offset = c.dp % shard_dp;  // dp position inside it
  TESSERA_ASSIGN_OR_RETURN(
      g.shard, world.Split(RankOf({c.tp, 0, shard_index * shard_dp, c.pp}, l),
                           c.cp + cp * shard_offset));
  TESSERA_ASSIGN_OR_RETURN(
      g.replica,
      world.Split(RankOf({c.tp, c.cp, shard_offset, c.pp}, l), shard_index));
  return g;
}

}  // namespace tessera::executor
