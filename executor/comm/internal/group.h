// The state the ranks of one in-process group share: its name, the world
// ranks of its members (by group rank), the rendezvous of its collectives
// and the mailboxes of its point-to-point messages. Every member's
// communicator holds the group; the world holds it weakly, to wake it on
// abort.
//
//   std::shared_ptr<Group> world_group =
//       Group::Create(world_state, "world", {0, 1, 2, 3});
//   world_group->mailbox(/*src=*/0, /*dst=*/1).Send(buf, stats);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "executor/comm/internal/mailbox.h"
#include "executor/comm/internal/rendezvous.h"
#include "executor/comm/internal/world_state.h"

namespace tessera::executor::comm_internal {

class Group final : public Wakeable {
 public:
  // A group of world.size() >= world_ranks.size() >= 1 members, registered
  // with the world for abort.
  static std::shared_ptr<Group> Create(std::shared_ptr<WorldState> world,
                                       std::string name,
                                       std::vector<int> world_ranks);

  const std::string& name() const { return name_; }
  int size() const { return static_cast<int>(world_ranks_.size()); }
  int world_rank(int rank) const { return world_ranks_[rank]; }
  WorldState& world() const { return *world_; }
  const std::shared_ptr<WorldState>& shared_world() const { return world_; }
  // "rank 2 (world rank 5)", or "rank 2" in the world group itself.
  std::string RankName(int rank) const;

  Rendezvous& rendezvous() { return rendezvous_; }
  // Messages from group rank `src` to group rank `dst`.
  Mailbox& mailbox(int src, int dst) { return *mailboxes_[src * size() + dst]; }

  void WakeAll() override;

 private:
  Group(std::shared_ptr<WorldState> world, std::string name,
        std::vector<int> world_ranks);

  const std::shared_ptr<WorldState> world_;
  const std::string name_;
  const std::vector<int> world_ranks_;
  const bool is_world_;  // every world rank, in order
  Rendezvous rendezvous_;
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;  // size() x size()
};

}  // namespace tessera::executor::comm_internal
