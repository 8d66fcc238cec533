// The connections of one process of a TCP world, shared by every
// communicator (group) of that process. One reader thread per peer reads
// whole messages as soon as they arrive and queues them by (group, sender,
// channel), so a peer's writes never wait for this process to call Recv and
// two processes writing to each other cannot deadlock. Writes happen on the
// caller's thread, one message at a time per connection.
//
// Failure: a connection that ends without a goodbye, or breaks, aborts the
// world ("world rank 2 disconnected: ..."), and so does an abort notice
// from a peer; every pending and future Send and Receive then returns
// ABORTED. A peer that closed its mesh cleanly (goodbye) only fails the
// operations that still need it. The destructor says goodbye, lets the
// peers acknowledge it (bounded), and joins the readers; an aborted mesh
// instead repeats its abort notice, so that peers report the cause rather
// than the disconnection whichever connection they read first.
//
//   TcpMesh mesh(rank, std::move(sockets), absl::Seconds(60));
//   TESSERA_RETURN_IF_ERROR(mesh.Send(peer, header, data));
//   std::vector<Message> got;
//   std::vector<int> missing;
//   TESSERA_RETURN_IF_ERROR(mesh.ReceiveEach(group, Channel::kPointToPoint,
//       {peer}, 0, deadline, got, missing));
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "executor/comm/internal/annotated_mutex.h"
#include "executor/comm/internal/tcp_socket.h"
#include "executor/comm/internal/tcp_wire.h"

namespace tessera::executor::tcp_internal {

// Which ordered stream of a group a message belongs to: collectives (every
// rank calls them in the same order) or Send/Recv (FIFO per sender).
enum class Channel : uint8_t { kCollective, kPointToPoint };

class TcpMesh {
 public:
  // Takes the connections by world rank (peers[rank] unused) and starts a
  // reader per peer. `timeout` bounds every Send.
  TcpMesh(int rank, std::vector<Socket> peers, absl::Duration timeout);
  ~TcpMesh();
  TcpMesh(const TcpMesh&) = delete;
  TcpMesh& operator=(const TcpMesh&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  absl::Duration timeout() const { return timeout_; }

  // Sends header + header.payload_bytes bytes of `payload` to world rank
  // `peer` (to this rank itself: queued directly). Returns once the bytes
  // are with the kernel, never waiting for a Receive. ABORTED after an
  // abort or when the peer has gone (naming it), DEADLINE_EXCEEDED when the
  // connection stayed full past the timeout.
  absl::Status Send(int peer, const WireHeader& header, const void* payload);

  // Takes the oldest message of (group, channel) from each world rank in
  // `srcs`, waiting until all have one; out[i] is srcs[i]'s. Collective
  // messages with seq < min_seq are left over from a collective that failed
  // here and are dropped. Messages that have arrived are delivered even
  // after an abort; waiting for more returns ABORTED then, or when a peer
  // left without sending (naming it); DEADLINE_EXCEEDED (no message) when
  // the deadline passed, with `missing` listing the senders still awaited.
  absl::Status ReceiveEach(uint64_t group, Channel channel,
                           absl::Span<const int> srcs, uint64_t min_seq,
                           const Deadline& deadline, std::vector<Message>& out,
                           std::vector<int>& missing);

  // Makes every pending and future operation return ABORTED with `cause`'s
  // message (the first cause wins) and tells every peer, whose worlds abort
  // with "world rank <this> aborted: <cause>". Any thread, any time.
  void Abort(const absl::Status& cause);
  // OK, or the ABORTED status operations return after an abort.
  absl::Status abort_status() const;

  // Claims a group id for a communicator of this process: false when a
  // live group already has it (a hash collision of two names).
  bool AddGroup(uint64_t group);
  // Releases a group id and drops its queued messages.
  void RemoveGroup(uint64_t group);

 private:
  struct Peer {
    Socket socket;
    // One message at a time on the connection (guards no member: taken
    // within a deadline, LockWithin, which the analysis cannot follow).
    std::mutex write_mu;
    std::thread reader;
    bool left = false;         // said goodbye (guarded by mu_)
    bool reader_done = false;  // its reader has returned (guarded by mu_)
    std::atomic<bool> broken{false};  // a write failed midway: stream unusable
  };
  using QueueKey = std::tuple<uint64_t, int, Channel>;  // group, src, channel

  void ReadLoop(int peer);
  // Queues a message for Receive.
  void Deliver(int src, Message message);
  // Records an abort (the first one wins): operations here return
  // `status`, peers are told `notice` now when `tell_peers`, and when this
  // mesh closes in any case.
  void AbortWith(absl::Status status, std::string notice, bool tell_peers);
  // AbortWith's bookkeeping: true when this is the first cause. `why`
  // alone: the status and the notice are the same text.
  bool RecordAbort(absl::Status status, std::string notice)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool RecordAbort(const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes an abort notice to every peer whose connection is usable.
  void TellPeers(const std::string& notice);
  // Why Send to / Receive from `peer` cannot work, or OK.
  absl::Status PeerGone(int peer) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int rank_;
  const absl::Duration timeout_;
  std::vector<std::unique_ptr<Peer>> peers_;  // by world rank
  std::atomic<bool> aborted_{false};
  std::atomic<bool> closing_{false};

  mutable comm_internal::Mutex mu_;
  std::condition_variable changed_;
  absl::Status abort_status_ ABSL_GUARDED_BY(mu_);
  std::string abort_notice_ ABSL_GUARDED_BY(mu_);  // what peers are told
  std::map<QueueKey, std::deque<Message>> queues_ ABSL_GUARDED_BY(mu_);
  std::set<uint64_t> groups_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::executor::tcp_internal
