#include "executor/comm/inproc_communicator.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/comm/internal/argument_checks.h"
#include "executor/comm/internal/call_context.h"
#include "executor/comm/internal/group.h"
#include "executor/comm/internal/rendezvous.h"
#include "executor/comm/internal/world_state.h"

namespace tessera::executor {

using comm_internal::CollectiveCall;
using comm_internal::CollectiveKind;
using comm_internal::Group;
using comm_internal::SplitResult;
using comm_internal::WorldState;

namespace {

// Meets the group's other ranks at collective number `seq`.
absl::Status RunCollective(Group& group, int rank, uint64_t seq,
                           const CollectiveCall& call,
                           comm_internal::Rendezvous::Work work,
                           CommStats& stats) {
  ++stats.collectives;
  return group.rendezvous().Run(
      rank, seq, call, work, [&](int r) { return group.RankName(r); }, stats);
}

}  // namespace

InProcessCommunicator::InProcessCommunicator(std::shared_ptr<Group> group,
                                             int rank)
    : group_(std::move(group)), rank_(rank) {}

InProcessCommunicator::~InProcessCommunicator() = default;

int InProcessCommunicator::size() const { return group_->size(); }
int InProcessCommunicator::world_rank() const {
  return group_->world_rank(rank_);
}
const std::string& InProcessCommunicator::group_name() const {
  return group_->name();
}

absl::Status InProcessCommunicator::AllReduce(const Tensor& send,
                                              const Tensor& recv, ReduceOp op) {
  CollectiveCall call;
  call.kind = CollectiveKind::kAllReduce;
  call.dtype = send.dtype;
  call.count = send.numel;
  call.op = op;
  call.send = send;
  call.recv = recv;
  call.local = comm_internal::CheckAllReduce(send, recv);
  stats_.bytes += static_cast<int64_t>(send.bytes());
  MemoryOps& ops = group_->world().memory_ops();
  const int n = size();
  // Rank r reduces elements [count*r/n, count*(r+1)/n) over every rank in
  // rank order and copies them to every rank, so each element is computed
  // once: results are bitwise equal everywhere. In place is safe: only rank
  // r reads or writes that range of any buffer.
  return RunCollective(
      *group_, rank_, seq_++, call,
      [&](absl::Span<const CollectiveCall> calls) -> absl::Status {
        const int64_t count = send.numel;
        const int64_t begin = count * rank_ / n;
        const int64_t length = count * (rank_ + 1) / n - begin;
        if (length == 0) return absl::OkStatus();
        std::vector<const void*> srcs(n);
        for (int r = 0; r < n; ++r) {
          srcs[r] = calls[r].send.Slice(begin, length).data;
        }
        const Tensor mine = calls[rank_].recv.Slice(begin, length);
        absl::Status s = ops.Reduce(srcs, mine.data, length, send.dtype, op);
        for (int r = 0; r < n && s.ok(); ++r) {
          if (r == rank_) continue;
          s = ops.Copy(calls[r].recv.Slice(begin, length).data, mine.data,
                       mine.bytes());
        }
        return s;
      },
      stats_);
}

absl::Status InProcessCommunicator::AllGather(const Tensor& send,
                                              const Tensor& recv) {
  const int n = size();
  CollectiveCall call;
  call.kind = CollectiveKind::kAllGather;
  call.dtype = send.dtype;
  call.count = send.numel;
  call.send = send;
  call.recv = recv;
  call.local = comm_internal::CheckAllGather(send, recv, rank_, n);
  stats_.bytes += static_cast<int64_t>(recv.bytes());
  MemoryOps& ops = group_->world().memory_ops();
  // Each rank pulls every block into its own recv (its own block in place
  // is a copy onto itself, which MemoryOps skips).
  return RunCollective(
      *group_, rank_, seq_++, call,
      [&](absl::Span<const CollectiveCall> calls) -> absl::Status {
        const int64_t count = send.numel;
        for (int r = 0; r < n; ++r) {
          TESSERA_RETURN_IF_ERROR(ops.Copy(recv.Slice(r * count, count).data,
                                           calls[r].send.data,
                                           calls[r].send.bytes()));
        }
        return absl::OkStatus();
      },
      stats_);
}

absl::Status InProcessCommunicator::ReduceScatter(const Tensor& send,
                                                  const Tensor& recv,
                                                  ReduceOp op) {
  const int n = size();
  CollectiveCall call;
  call.kind = CollectiveKind::kReduceScatter;
  call.dtype = send.dtype;
  call.count = recv.numel;
  call.op = op;
  call.send = send;
  call.recv = recv;
  call.local = comm_internal::CheckReduceScatter(send, recv, rank_, n);
  stats_.bytes += static_cast<int64_t>(send.bytes());
  MemoryOps& ops = group_->world().memory_ops();
  // Rank r reduces block r of every rank's send, in rank order.
  return RunCollective(
      *group_, rank_, seq_++, call,
      [&](absl::Span<const CollectiveCall> calls) -> absl::Status {
        const int64_t count = recv.numel;
        if (count == 0) return absl::OkStatus();
        std::vector<const void*> srcs(n);
        for (int r = 0; r < n; ++r) {
          srcs[r] = calls[r].send.Slice(rank_ * count, count).data;
        }
        return ops.Reduce(srcs, recv.data, count, recv.dtype, op);
      },
      stats_);
}

absl::Status InProcessCommunicator::Broadcast(const Tensor& buf, int root) {
  CollectiveCall call;
  call.kind = CollectiveKind::kBroadcast;
  call.dtype = buf.dtype;
  call.count = buf.numel;
  call.root = root;
  call.send = buf;
  call.local = comm_internal::CheckBroadcast(buf, root, size());
  stats_.bytes += static_cast<int64_t>(buf.bytes());
  MemoryOps& ops = group_->world().memory_ops();
  return RunCollective(
      *group_, rank_, seq_++, call,
      [&](absl::Span<const CollectiveCall> calls) -> absl::Status {
        if (rank_ == root) return absl::OkStatus();
        return ops.Copy(buf.data, calls[root].send.data, buf.bytes());
      },
      stats_);
}

absl::Status InProcessCommunicator::Barrier() {
  CollectiveCall call;
  call.kind = CollectiveKind::kBarrier;
  return RunCollective(
      *group_, rank_, seq_++, call,
      [](absl::Span<const CollectiveCall>) { return absl::OkStatus(); },
      stats_);
}

absl::StatusOr<std::unique_ptr<Communicator>> InProcessCommunicator::Split(
    int color, int key) {
  SplitResult result;
  CollectiveCall call;
  call.kind = CollectiveKind::kSplit;
  call.color = color;
  call.key = key;
  call.split_out = &result;
  call.local = comm_internal::CheckSplitColor(color);
  const uint64_t seq = seq_++;
  // Rank 0 forms every new group and hands each rank its place; the others
  // read theirs once the rendezvous ends.
  TESSERA_RETURN_IF_ERROR(RunCollective(
      *group_, rank_, seq, call,
      [&](absl::Span<const CollectiveCall> calls) -> absl::Status {
        if (rank_ != 0) return absl::OkStatus();
        std::map<int, std::vector<int>> by_color;  // parent ranks
        for (int r = 0; r < size(); ++r) by_color[calls[r].color].push_back(r);
        for (auto& [c, members] : by_color) {
          std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
            return calls[a].key < calls[b].key;  // ties keep rank order
          });
          std::vector<int> world_ranks;
          for (int r : members) world_ranks.push_back(group_->world_rank(r));
          std::shared_ptr<Group> child = Group::Create(
              group_->shared_world(),
              absl::StrCat(group_->name(), "/split#", seq, ":color=", c),
              std::move(world_ranks));
          for (size_t i = 0; i < members.size(); ++i) {
            *calls[members[i]].split_out =
                SplitResult{child, static_cast<int>(i)};
          }
        }
        return absl::OkStatus();
      },
      stats_));
  return std::make_unique<InProcessCommunicator>(std::move(result.group),
                                                 result.rank);
}

absl::Status InProcessCommunicator::Send(const Tensor& buf, int peer) {
  TESSERA_RETURN_IF_ERROR(comm_internal::CheckPeer("Send: peer", peer, size()));
  const std::string context =
      comm_internal::DescribeSend(buf, group_->RankName(peer), group_->name());
  TESSERA_RETURN_IF_ERROR(
      comm_internal::Annotate(comm_internal::CheckTensor("buf", buf), context));
  ++stats_.sends;
  stats_.bytes += static_cast<int64_t>(buf.bytes());
  return comm_internal::Annotate(group_->mailbox(rank_, peer).Send(buf, stats_),
                                 context);
}

absl::Status InProcessCommunicator::Recv(const Tensor& buf, int peer) {
  TESSERA_RETURN_IF_ERROR(comm_internal::CheckPeer("Recv: peer", peer, size()));
  if (deferred_.open()) return deferred_.Defer(buf, peer);
  return RecvNow(buf, peer);
}

absl::Status InProcessCommunicator::RecvNow(const Tensor& buf, int peer) {
  const std::string context = comm_internal::DescribeRecv(
      buf, group_->RankName(peer), group_->RankName(rank_), group_->name());
  TESSERA_RETURN_IF_ERROR(
      comm_internal::Annotate(comm_internal::CheckTensor("buf", buf), context));
  ++stats_.recvs;
  stats_.bytes += static_cast<int64_t>(buf.bytes());
  return comm_internal::Annotate(group_->mailbox(peer, rank_).Recv(buf, stats_),
                                 context);
}

absl::Status InProcessCommunicator::GroupStart() {
  deferred_.Start();
  return absl::OkStatus();
}

absl::Status InProcessCommunicator::GroupEnd() {
  return deferred_.End(
      [&](const Tensor& buf, int peer) { return RecvNow(buf, peer); });
}

// ---- InProcessWorld --------------------------------------------------------

absl::StatusOr<std::unique_ptr<InProcessWorld>> InProcessWorld::Create(
    int size, InProcessOptions options) {
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("world size ", size, " (must be >= 1)"));
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.timeout ", absl::FormatDuration(options.timeout),
                     " (must be positive)"));
  }
  std::shared_ptr<MemoryOps> ops = std::move(options.memory_ops);
  if (ops == nullptr) {
    ops = std::shared_ptr<MemoryOps>(&HostMemoryOps::Get(), [](MemoryOps*) {});
  }
  return std::unique_ptr<InProcessWorld>(new InProcessWorld(
      std::make_shared<WorldState>(size, options.timeout, std::move(ops))));
}

InProcessWorld::InProcessWorld(std::shared_ptr<WorldState> state)
    : state_(std::move(state)) {
  std::vector<int> world_ranks(state_->size());
  std::iota(world_ranks.begin(), world_ranks.end(), 0);
  std::shared_ptr<Group> world =
      Group::Create(state_, "world", std::move(world_ranks));
  for (int r = 0; r < state_->size(); ++r) {
    ranks_.push_back(std::make_unique<InProcessCommunicator>(world, r));
  }
}

InProcessWorld::~InProcessWorld() = default;

int InProcessWorld::size() const { return state_->size(); }

void InProcessWorld::Abort(const absl::Status& cause) { state_->Abort(cause); }

absl::Status InProcessWorld::abort_status() const {
  return state_->abort_status();
}

}  // namespace tessera::executor
