#include "executor/comm/tcp_communicator.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "executor/comm/internal/argument_checks.h"
#include "executor/comm/internal/call_context.h"
#include "executor/comm/internal/tcp_mesh.h"
#include "executor/comm/internal/tcp_rendezvous.h"
#include "executor/comm/internal/tcp_socket.h"
#include "executor/comm/internal/tcp_wire.h"
#include "executor/comm/memory_ops.h"

namespace tessera::executor {

using tcp_internal::Channel;
using tcp_internal::Message;
using tcp_internal::MessageKind;
using tcp_internal::TcpMesh;
using tcp_internal::WireHeader;

// What one rank passed to one collective, as its messages carry it: what
// the others must agree on (call_agreement.h), and Split's color and key.
struct TcpCommunicator::Call : comm_internal::CallSignature {
  int color = 0;
  int key = 0;
};

namespace {

constexpr absl::string_view kWorldName = "world";

absl::string_view Bytes(const Tensor& t) {
  return absl::string_view(static_cast<const char*>(t.data), t.bytes());
}
absl::string_view NoBytes(int) { return absl::string_view(); }

void CopyBytes(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes > 0) std::memcpy(dst, src, bytes);
}

// The block of `count` elements that group rank r owns in an AllReduce of n
// ranks: [count*r/n, count*(r+1)/n), as the in-process communicator splits.
Tensor Block(const Tensor& t, int r, int n) {
  const int64_t begin = t.numel * r / n;
  return t.Slice(begin, t.numel * (r + 1) / n - begin);
}

// INTERNAL unless `m` carries exactly `bytes` bytes (after a good verdict
// every rank agrees on the sizes, so this is a bug, not a user error).
absl::Status ExpectPayload(const Message& m, size_t bytes,
                           absl::FunctionRef<std::string()> what) {
  if (m.header.payload_bytes == bytes) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what(), ": protocol error: got ",
                                          m.header.payload_bytes,
                                          " bytes, want ", bytes));
}

}  // namespace

TcpCommunicator::TcpCommunicator(std::shared_ptr<TcpMesh> mesh,
                                 std::string name, std::vector<int> world_ranks,
                                 int rank)
    : mesh_(std::move(mesh)),
      name_(std::move(name)),
      id_(tcp_internal::GroupId(name_)),
      world_ranks_(std::move(world_ranks)),
      rank_(rank) {}

TcpCommunicator::~TcpCommunicator() { mesh_->RemoveGroup(id_); }

std::string TcpCommunicator::RankName(int rank) const {
  if (name_ == kWorldName) return absl::StrCat("rank ", rank);
  return absl::StrCat("rank ", rank, " (world rank ", world_ranks_[rank], ")");
}

void TcpCommunicator::Abort(const absl::Status& cause) { mesh_->Abort(cause); }

absl::Status TcpCommunicator::abort_status() const {
  return mesh_->abort_status();
}

// ---- The two steps every collective is made of ----------------------------

absl::Status TcpCommunicator::Exchange(const Call& call, uint64_t seq, int step,
                                       PartFn part,
                                       std::vector<Message>* from) {
  const int n = size();
  WireHeader h;
  h.kind = tcp_internal::WireKind(call.kind);
  h.dtype = static_cast<uint8_t>(call.dtype);
  h.op = static_cast<uint8_t>(call.op);
  h.step = static_cast<uint8_t>(step);
  h.has_error = call.local.ok() ? 0 : 1;
  h.root = call.root;
  h.color = call.color;
  h.key = call.key;
  h.group_id = id_;
  h.seq = seq;
  h.count = call.count;
  // Peers in a rotated order, so that the ranks do not all write to the
  // same one first.
  for (int k = 1; k < n; ++k) {
    const int peer = (rank_ + k) % n;
    const absl::string_view bytes =
        call.local.ok() ? part(peer) : call.local.message();
    h.payload_bytes = bytes.size();
    absl::Status sent = mesh_->Send(world_ranks_[peer], h, bytes.data());
    if (!sent.ok()) {
      return comm_internal::Annotate(
          sent, absl::StrCat(comm_internal::DescribeCall(call, seq, name_),
                             ": sending to ", RankName(peer)));
    }
  }
  std::vector<int> srcs;  // world ranks, in group rank order
  for (int r = 0; r < n; ++r) {
    if (r != rank_) srcs.push_back(world_ranks_[r]);
  }
  std::vector<Message> got;
  std::vector<int> missing;
  absl::Status s = mesh_->ReceiveEach(
      id_, Channel::kCollective, srcs, seq,
      tcp_internal::DeadlineAfter(mesh_->timeout()), got, missing);
  if (s.code() == absl::StatusCode::kDeadlineExceeded) {
    std::vector<std::string> names;
    for (int world : missing) {
      const auto it =
          std::find(world_ranks_.begin(), world_ranks_.end(), world);
      names.push_back(RankName(static_cast<int>(it - world_ranks_.begin())));
    }
    return absl::DeadlineExceededError(absl::StrCat(
        comm_internal::DescribeCall(call, seq, name_), ": ", RankName(rank_),
        " waited ", absl::FormatDuration(mesh_->timeout()), " but ",
        absl::StrJoin(names, ", "),
        step == 0 ? " did not arrive" : " did not send its share"));
  }
  if (!s.ok()) {
    // The world's abort keeps its cause; a peer that left gets the context.
    if (s == mesh_->abort_status()) return s;
    return absl::Status(
        s.code(), absl::StrCat(comm_internal::DescribeCall(call, seq, name_),
                               ": ", s.message()));
  }
  from->clear();
  from->resize(n);
  for (size_t i = 0, r = 0; i < got.size(); ++i, ++r) {
    if (static_cast<int>(r) == rank_) ++r;
    const WireHeader& g = got[i].header;
    if (g.seq != seq || g.step != step) {
      return absl::InternalError(
          absl::StrCat(comm_internal::DescribeCall(call, seq, name_),
                       ": protocol error: ", RankName(static_cast<int>(r)),
                       " sent step ", g.step, " of collective #", g.seq));
    }
    (*from)[r] = std::move(got[i]);
  }
  return absl::OkStatus();
}

absl::Status TcpCommunicator::Arrive(const Call& call, uint64_t seq,
                                     PartFn part, std::vector<Message>* from) {
  TESSERA_RETURN_IF_ERROR(Exchange(call, seq, /*step=*/0, part, from));
  // Every rank holds every call now and checks them alike, in rank order,
  // so every rank returns the same verdict.
  std::vector<Call> calls(size());
  for (int r = 0; r < size(); ++r) {
    if (r == rank_) {
      calls[r] = call;
      continue;
    }
    const Message& m = (*from)[r];
    Call& c = calls[r];
    c.kind = tcp_internal::CollectiveOf(m.header.kind);
    c.dtype = static_cast<DType>(m.header.dtype);
    c.op = static_cast<ReduceOp>(m.header.op);
    c.count = m.header.count;
    c.root = m.header.root;
    c.color = m.header.color;
    c.key = m.header.key;
    if (m.header.has_error) {
      c.local = absl::InvalidArgumentError(
          absl::string_view(m.payload.get(), m.header.payload_bytes));
    }
  }
  return comm_internal::CheckCallsAgree(
      size(),
      [&](int r) -> const comm_internal::CallSignature& { return calls[r]; },
      seq, name_, [&](int r) { return RankName(r); });
}

// ---- Collectives ----------------------------------------------------------

absl::Status TcpCommunicator::AllReduce(const Tensor& send, const Tensor& recv,
                                        ReduceOp op) {
  Call call;
  call.kind = comm_internal::CollectiveKind::kAllReduce;
  call.dtype = send.dtype;
  call.count = send.numel;
  call.op = op;
  call.local = comm_internal::CheckAllReduce(send, recv);
  const int n = size();
  const uint64_t seq = seq_++;
  // Reduce-scatter: every rank sends block p of its send to rank p, which
  // reduces it over all ranks in rank order (each element computed once,
  // as in-process: bitwise equal everywhere)...
  std::vector<Message> from;
  TESSERA_RETURN_IF_ERROR(Arrive(
      call, seq, [&](int peer) { return Bytes(Block(send, peer, n)); }, &from));
  auto what = [&] { return comm_internal::DescribeCall(call, seq, name_); };
  const Tensor mine_in = Block(send, rank_, n);
  const Tensor mine = Block(recv, rank_, n);
  std::vector<const void*> srcs(n);
  for (int r = 0; r < n; ++r) {
    if (r == rank_) {
      srcs[r] = mine_in.data;
      continue;
    }
    TESSERA_RETURN_IF_ERROR(ExpectPayload(from[r], mine_in.bytes(), what));
    srcs[r] = from[r].payload.get();
  }
  if (mine.numel > 0) {
    TESSERA_RETURN_IF_ERROR(HostMemoryOps::Get().Reduce(
        srcs, mine.data, mine.numel, send.dtype, op));
  }
  // ...then all-gather: each owner sends its reduced block to everyone.
  // In place is safe: block p of send went out before block p of recv is
  // written.
  TESSERA_RETURN_IF_ERROR(Exchange(
      call, seq, /*step=*/1, [&](int) { return Bytes(mine); }, &from));
  for (int r = 0; r < n; ++r) {
    if (r == rank_) continue;
    const Tensor block = Block(recv, r, n);
    TESSERA_RETURN_IF_ERROR(ExpectPayload(from[r], block.bytes(), what));
    CopyBytes(block.data, from[r].payload.get(), block.bytes());
  }
  return absl::OkStatus();
}

absl::Status TcpCommunicator::AllGather(const Tensor& send,
                                        const Tensor& recv) {
  const int n = size();
  Call call;
  call.kind = comm_internal::CollectiveKind::kAllGather;
  call.dtype = send.dtype;
  call.count = send.numel;
  call.local = comm_internal::CheckAllGather(send, recv, rank_, n);
  const uint64_t seq = seq_++;
  std::vector<Message> from;
  TESSERA_RETURN_IF_ERROR(Arrive(
      call, seq, [&](int) { return Bytes(send); }, &from));
  auto what = [&] { return comm_internal::DescribeCall(call, seq, name_); };
  const int64_t count = send.numel;
  for (int r = 0; r < n; ++r) {
    const Tensor block = recv.Slice(r * count, count);
    if (r == rank_) {
      CopyBytes(block.data, send.data, send.bytes());
      continue;
    }
    TESSERA_RETURN_IF_ERROR(ExpectPayload(from[r], block.bytes(), what));
    CopyBytes(block.data, from[r].payload.get(), block.bytes());
  }
  return absl::OkStatus();
}

absl::Status TcpCommunicator::ReduceScatter(const Tensor& send,
                                            const Tensor& recv, ReduceOp op) {
  const int n = size();
  Call call;
  call.kind = comm_internal::CollectiveKind::kReduceScatter;
  call.dtype = send.dtype;
  call.count = recv.numel;
  call.op = op;
  call.local = comm_internal::CheckReduceScatter(send, recv, rank_, n);
  const uint64_t seq = seq_++;
  const int64_t count = recv.numel;
  // Rank r reduces block r of every rank's send, in rank order.
  std::vector<Message> from;
  TESSERA_RETURN_IF_ERROR(Arrive(
      call, seq,
      [&](int peer) { return Bytes(send.Slice(peer * count, count)); }, &from));
  if (count == 0) return absl::OkStatus();
  auto what = [&] { return comm_internal::DescribeCall(call, seq, name_); };
  std::vector<const void*> srcs(n);
  for (int r = 0; r < n; ++r) {
    if (r == rank_) {
      srcs[r] = send.Slice(rank_ * count, count).data;
      continue;
    }
    TESSERA_RETURN_IF_ERROR(ExpectPayload(from[r], recv.bytes(), what));
    srcs[r] = from[r].payload.get();
  }
  return HostMemoryOps::Get().Reduce(srcs, recv.data, count, recv.dtype, op);
}

absl::Status TcpCommunicator::Broadcast(const Tensor& buf, int root) {
  Call call;
  call.kind = comm_internal::CollectiveKind::kBroadcast;
  call.dtype = buf.dtype;
  call.count = buf.numel;
  call.root = root;
  call.local = comm_internal::CheckBroadcast(buf, root, size());
  const uint64_t seq = seq_++;
  // Every rank tells every other its call (so all check all); only the
  // root's messages carry the data.
  std::vector<Message> from;
  TESSERA_RETURN_IF_ERROR(Arrive(
      call, seq,
      [&](int) { return rank_ == root ? Bytes(buf) : absl::string_view(); },
      &from));
  if (rank_ == root) return absl::OkStatus();
  TESSERA_RETURN_IF_ERROR(ExpectPayload(from[root], buf.bytes(), [&] {
    return comm_internal::DescribeCall(call, seq, name_);
  }));
  CopyBytes(buf.data, from[root].payload.get(), buf.bytes());
  return absl::OkStatus();
}

absl::Status TcpCommunicator::Barrier() {
  Call call;
  call.kind = comm_internal::CollectiveKind::kBarrier;
  std::vector<Message> from;
  return Arrive(call, seq_++, NoBytes, &from);
}

absl::StatusOr<std::unique_ptr<Communicator>> TcpCommunicator::Split(int color,
                                                                     int key) {
  Call call;
  call.kind = comm_internal::CollectiveKind::kSplit;
  call.color = color;
  call.key = key;
  call.local = comm_internal::CheckSplitColor(color);
  const uint64_t seq = seq_++;
  std::vector<Message> from;
  TESSERA_RETURN_IF_ERROR(Arrive(call, seq, NoBytes, &from));
  // Every member sees every color and key, so all form the same groups.
  auto color_of = [&](int r) {
    return r == rank_ ? color : from[r].header.color;
  };
  auto key_of = [&](int r) { return r == rank_ ? key : from[r].header.key; };
  std::vector<int> members;  // parent ranks, ordered by key, ties by rank
  for (int r = 0; r < size(); ++r) {
    if (color_of(r) == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return key_of(a) < key_of(b); });
  std::vector<int> world_ranks;
  int new_rank = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == rank_) new_rank = static_cast<int>(i);
    world_ranks.push_back(world_ranks_[members[i]]);
  }
  std::string name = absl::StrCat(name_, "/split#", seq, ":color=", color);
  if (!mesh_->AddGroup(tcp_internal::GroupId(name))) {
    return absl::InternalError(
        absl::StrCat("Split #", seq, " on group ", name_, ": the id of group ",
                     name, " collides with a live group of this process"));
  }
  return std::unique_ptr<TcpCommunicator>(new TcpCommunicator(
      mesh_, std::move(name), std::move(world_ranks), new_rank));
}

// ---- Point to point ---------------------------------------------------------

absl::Status TcpCommunicator::Send(const Tensor& buf, int peer) {
  TESSERA_RETURN_IF_ERROR(comm_internal::CheckPeer("Send: peer", peer, size()));
  const std::string context =
      comm_internal::DescribeSend(buf, RankName(peer), name_);
  TESSERA_RETURN_IF_ERROR(
      comm_internal::Annotate(comm_internal::CheckTensor("buf", buf), context));
  WireHeader h;
  h.kind = MessageKind::kSend;
  h.dtype = static_cast<uint8_t>(buf.dtype);
  h.group_id = id_;
  h.seq = sends_++;
  h.count = buf.numel;
  h.payload_bytes = buf.bytes();
  absl::Status s = mesh_->Send(world_ranks_[peer], h, buf.data);
  if (!s.ok() && s != mesh_->abort_status()) {
    return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
  }
  return s;
}

absl::Status TcpCommunicator::Recv(const Tensor& buf, int peer) {
  TESSERA_RETURN_IF_ERROR(comm_internal::CheckPeer("Recv: peer", peer, size()));
  if (deferred_.open()) return deferred_.Defer(buf, peer);
  return RecvNow(buf, peer);
}

absl::Status TcpCommunicator::RecvNow(const Tensor& buf, int peer) {
  const std::string context =
      comm_internal::DescribeRecv(buf, RankName(peer), RankName(rank_), name_);
  TESSERA_RETURN_IF_ERROR(
      comm_internal::Annotate(comm_internal::CheckTensor("buf", buf), context));
  std::vector<Message> got;
  std::vector<int> missing;
  const int src = world_ranks_[peer];
  absl::Status s = mesh_->ReceiveEach(
      id_, Channel::kPointToPoint, {&src, 1}, 0,
      tcp_internal::DeadlineAfter(mesh_->timeout()), got, missing);
  if (s.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::DeadlineExceededError(
        absl::StrCat(context, ": no message within ",
                     absl::FormatDuration(mesh_->timeout())));
  }
  if (!s.ok()) {
    if (s == mesh_->abort_status()) return s;
    return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
  }
  const WireHeader& h = got[0].header;
  const auto dtype = static_cast<DType>(h.dtype);
  TESSERA_RETURN_IF_ERROR(comm_internal::Annotate(
      comm_internal::CheckRecvMatchesSend(buf, dtype, h.count), context));
  TESSERA_RETURN_IF_ERROR(
      ExpectPayload(got[0], buf.bytes(), [&] { return context; }));
  CopyBytes(buf.data, got[0].payload.get(), buf.bytes());
  return absl::OkStatus();
}

absl::Status TcpCommunicator::GroupStart() {
  deferred_.Start();
  return absl::OkStatus();
}

absl::Status TcpCommunicator::GroupEnd() {
  return deferred_.End(
      [&](const Tensor& buf, int peer) { return RecvNow(buf, peer); });
}

// ---- The world
// ----------------------------------------------------------------

absl::StatusOr<std::unique_ptr<TcpCommunicator>> ConnectTcpWorld(
    int rank, int world_size, const TcpWorldOptions& options) {
  if (world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("world_size ", world_size, " (must be >= 1)"));
  }
  if (rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank, " is outside the world's ranks [0, ", world_size, ")"));
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.timeout ", absl::FormatDuration(options.timeout),
                     " (must be positive)"));
  }
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.port ", options.port, " (must be 0..65535)"));
  }
  if (world_size > 1 && options.rendezvous_file.empty()) {
    return absl::InvalidArgumentError(
        "options.rendezvous_file: required when world_size > 1");
  }
  const std::string& advertise = options.advertise_host.empty()
                                     ? options.bind_host
                                     : options.advertise_host;
  if (tcp_internal::IsWildcardHost(advertise)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.advertise_host: required when bind_host is the wildcard \"",
        options.bind_host, "\" (other ranks cannot connect to it)"));
  }
  tcp_internal::MeshOptions mesh_options;
  mesh_options.rendezvous_file = options.rendezvous_file;
  mesh_options.bind_host = options.bind_host;
  mesh_options.port = options.port;
  mesh_options.advertise_host = advertise;
  mesh_options.deadline = tcp_internal::DeadlineAfter(options.timeout);
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<tcp_internal::Socket> peers,
      tcp_internal::FormMesh(rank, world_size, mesh_options));
  auto mesh =
      std::make_shared<TcpMesh>(rank, std::move(peers), options.timeout);
  std::string name(kWorldName);
  mesh->AddGroup(tcp_internal::GroupId(name));
  std::vector<int> world_ranks(world_size);
  std::iota(world_ranks.begin(), world_ranks.end(), 0);
  return std::unique_ptr<TcpCommunicator>(new TcpCommunicator(
      std::move(mesh), std::move(name), std::move(world_ranks), rank));
}

}  // namespace tessera::executor
