#include "executor/comm/internal/group.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace tessera::executor::comm_internal {
namespace {

bool IsIdentity(const std::vector<int>& ranks, int world_size) {
  if (static_cast<int>(ranks.size()) != world_size) return false;
  for (int r = 0; r < world_size; ++r) {
    if (ranks[r] != r) return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<Group> Group::Create(std::shared_ptr<WorldState> world,
                                     std::string name,
                                     std::vector<int> world_ranks) {
  WorldState* const state = world.get();
  std::shared_ptr<Group> group(
      new Group(std::move(world), std::move(name), std::move(world_ranks)));
  state->Register(group);
  return group;
}

Group::Group(std::shared_ptr<WorldState> world, std::string name,
             std::vector<int> world_ranks)
    : world_(std::move(world)),
      name_(std::move(name)),
      world_ranks_(std::move(world_ranks)),
      is_world_(IsIdentity(world_ranks_, world_->size())),
      rendezvous_(world_.get(), name_, size()) {
  mailboxes_.reserve(size() * size());
  for (int i = 0; i < size() * size(); ++i) {
    mailboxes_.push_back(std::make_unique<Mailbox>(world_.get()));
  }
}

std::string Group::RankName(int rank) const {
  if (is_world_) return absl::StrCat("rank ", rank);
  return absl::StrCat("rank ", rank, " (world rank ", world_ranks_[rank], ")");
}

void Group::WakeAll() {
  rendezvous_.WakeAll();
  for (const std::unique_ptr<Mailbox>& mailbox : mailboxes_) {
    mailbox->WakeAll();
  }
}

}  // namespace tessera::executor::comm_internal
