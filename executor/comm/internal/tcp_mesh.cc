#include "executor/comm/internal/tcp_mesh.h"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tessera::executor::tcp_internal {
namespace {

// A header announcing more than this is corruption, not a tensor.
constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 40;
// How long a closing mesh waits for its goodbyes to be acknowledged, and
// how long an abort notice may take to write.
constexpr absl::Duration kCloseLinger = absl::Seconds(2);
constexpr absl::Duration kAbortNoticeTimeout = absl::Seconds(1);
// How long a writer whose connection broke waits for the reader to drain
// what the peer sent before it.
constexpr auto kReaderDrain = std::chrono::seconds(1);

std::string PeerName(int peer) { return absl::StrCat("world rank ", peer); }

// Takes `lock`'s mutex unless the deadline passes first. (Polling try_lock
// rather than a timed mutex: ThreadSanitizer does not see timed locks.)
bool LockWithin(std::unique_lock<std::mutex>& lock, const Deadline& deadline) {
  while (!lock.try_lock()) {
    if (Expired(deadline)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

TcpMesh::TcpMesh(int rank, std::vector<Socket> peers, absl::Duration timeout)
    : rank_(rank), timeout_(timeout) {
  peers_.reserve(peers.size());
  for (Socket& s : peers) {
    peers_.push_back(std::make_unique<Peer>());
    peers_.back()->socket = std::move(s);
  }
  for (int p = 0; p < size(); ++p) {
    if (p != rank_) peers_[p]->reader = std::thread([this, p] { ReadLoop(p); });
  }
}

TcpMesh::~TcpMesh() {
  closing_.store(true, std::memory_order_release);
  if (aborted_.load(std::memory_order_acquire)) {
    // Closing without a goodbye reads as a disconnection at the peers:
    // tell them first why, so that they report the cause, whichever of
    // their connections they read first.
    std::string notice;
    {
      comm_internal::MutexLock lock(mu_);
      notice = abort_notice_;
    }
    TellPeers(notice);
  } else {
    // No communicator is left, so nobody else writes: say goodbye.
    WireHeader bye;
    bye.kind = MessageKind::kGoodbye;
    const ByteRange range{&bye, sizeof(bye)};
    for (int p = 0; p < size(); ++p) {
      Peer& peer = *peers_[p];
      if (p == rank_ || peer.broken.load()) continue;
      std::lock_guard<std::mutex> write_lock(peer.write_mu);
      (void)WriteAll(peer.socket.fd(), {&range, 1},
                     DeadlineAfter(kCloseLinger));
    }
  }
  // Half-close, so that each peer reads the last message before the end of
  // the stream. Closing with unread input resets the connection, which may
  // drop what is still unsent: wait (bounded) until each peer has
  // acknowledged everything or has closed its end too.
  const Deadline linger = DeadlineAfter(std::min(kCloseLinger, timeout_));
  for (int p = 0; p < size(); ++p) {
    if (p == rank_) continue;
    ::shutdown(peers_[p]->socket.fd(), SHUT_WR);
    for (;;) {
      {
        comm_internal::MutexLock lock(mu_);
        if (peers_[p]->reader_done) break;
      }
      if (UnacknowledgedBytes(peers_[p]->socket.fd()) == 0 || Expired(linger)) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  for (int p = 0; p < size(); ++p) {
    if (p == rank_) continue;
    ::shutdown(peers_[p]->socket.fd(), SHUT_RDWR);  // wakes the reader
    if (peers_[p]->reader.joinable()) peers_[p]->reader.join();
    peers_[p]->socket.Close();
  }
}

absl::Status TcpMesh::Send(int peer, const WireHeader& header,
                           const void* payload) {
  if (aborted_.load(std::memory_order_acquire)) return abort_status();
  if (peer == rank_) {
    Message m;
    m.header = header;
    if (header.payload_bytes > 0) {
      m.payload.reset(new (std::nothrow) char[header.payload_bytes]);
      if (m.payload == nullptr) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "no memory to queue ", header.payload_bytes, " bytes"));
      }
      std::memcpy(m.payload.get(), payload, header.payload_bytes);
    }
    Deliver(rank_, std::move(m));
    return absl::OkStatus();
  }
  {
    comm_internal::MutexLock lock(mu_);
    if (absl::Status gone = PeerGone(peer); !gone.ok()) return gone;
  }
  Peer& p = *peers_[peer];
  absl::Status s;
  {
    std::lock_guard<std::mutex> write_lock(p.write_mu);
    if (p.broken.load()) {
      return absl::AbortedError(absl::StrCat(
          "the connection to ", PeerName(peer), " broke in an earlier write"));
    }
    const ByteRange ranges[] = {{&header, sizeof(header)},
                                {payload, header.payload_bytes}};
    s = WriteAll(p.socket.fd(), ranges, DeadlineAfter(timeout_),
                 [this] { return aborted_.load(); });
    if (s.ok()) return s;
    // Part of the message may be out: nothing more can follow it on this
    // stream. End it, so the peer sees a disconnection, not garbage.
    p.broken.store(true);
    ::shutdown(p.socket.fd(), SHUT_WR);
  }
  if (aborted_.load()) return abort_status();
  if (s.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::DeadlineExceededError(
        absl::StrCat(PeerName(peer), " did not take the message within ",
                     absl::FormatDuration(timeout_)));
  }
  // The connection broke. What the peer said last (a goodbye, an abort
  // notice) may still wait in the input: let the reader get to it (it
  // ends promptly on a broken connection) before naming the cause.
  std::string why;
  {
    comm_internal::MutexLock lock(mu_);
    changed_.wait_for(lock.native(), kReaderDrain,
                      [&] { return p.reader_done || aborted_.load(); });
    if (aborted_.load()) return abort_status_;
    if (p.left) return PeerGone(peer);
    why = absl::StrCat(PeerName(peer), " disconnected: ", s.message());
    if (!RecordAbort(why)) return abort_status_;
  }
  TellPeers(why);
  return absl::AbortedError(why);
}

absl::Status TcpMesh::ReceiveEach(uint64_t group, Channel channel,
                                  absl::Span<const int> srcs, uint64_t min_seq,
                                  const Deadline& deadline,
                                  std::vector<Message>& out,
                                  std::vector<int>& missing) {
  out.clear();
  out.resize(srcs.size());
  std::vector<bool> got(srcs.size(), false);
  size_t remaining = srcs.size();
  comm_internal::MutexLock lock(mu_);
  for (;;) {
    // What has arrived is delivered even after an abort (a collective every
    // rank has joined completes); only waiting for more fails.
    for (size_t i = 0; i < srcs.size(); ++i) {
      if (got[i]) continue;
      auto it = queues_.find(QueueKey{group, srcs[i], channel});
      if (it == queues_.end()) continue;
      std::deque<Message>& queue = it->second;
      while (!queue.empty() && channel == Channel::kCollective &&
             queue.front().header.seq < min_seq) {
        queue.pop_front();
      }
      if (!queue.empty()) {
        out[i] = std::move(queue.front());
        queue.pop_front();
        got[i] = true;
        --remaining;
      }
      if (queue.empty()) queues_.erase(it);
    }
    if (remaining == 0) return absl::OkStatus();
    if (aborted_.load(std::memory_order_acquire)) return abort_status_;
    for (size_t i = 0; i < srcs.size(); ++i) {
      if (got[i]) continue;
      if (absl::Status gone = PeerGone(srcs[i]); !gone.ok()) return gone;
    }
    if (Expired(deadline)) {
      missing.clear();
      for (size_t i = 0; i < srcs.size(); ++i) {
        if (!got[i]) missing.push_back(srcs[i]);
      }
      return absl::DeadlineExceededError("");
    }
    if (deadline.has_value()) {
      changed_.wait_until(lock.native(), *deadline);
    } else {
      changed_.wait(lock.native());
    }
  }
}

void TcpMesh::Abort(const absl::Status& cause) {
  AbortWith(absl::AbortedError(cause.message()),
            absl::StrCat(PeerName(rank_), " aborted: ", cause.message()),
            /*tell_peers=*/true);
}

absl::Status TcpMesh::abort_status() const {
  comm_internal::MutexLock lock(mu_);
  return abort_status_;
}

bool TcpMesh::AddGroup(uint64_t group) {
  comm_internal::MutexLock lock(mu_);
  return groups_.insert(group).second;
}

void TcpMesh::RemoveGroup(uint64_t group) {
  comm_internal::MutexLock lock(mu_);
  groups_.erase(group);
  auto it = queues_.lower_bound(QueueKey{group, 0, Channel::kCollective});
  while (it != queues_.end() && std::get<0>(it->first) == group) {
    it = queues_.erase(it);
  }
}

void TcpMesh::ReadLoop(int peer) {
  const int fd = peers_[peer]->socket.fd();
  absl::Status status;
  for (;;) {
    Message m;
    status = ReadAll(fd, &m.header, sizeof(m.header));
    if (!status.ok()) break;
    const WireHeader& h = m.header;
    if (h.magic != kWireMagic || h.payload_bytes > kMaxPayloadBytes) {
      status = absl::DataLossError("malformed message header");
      break;
    }
    if (h.payload_bytes > 0) {
      m.payload.reset(new (std::nothrow) char[h.payload_bytes]);
      if (m.payload == nullptr) {
        status = absl::ResourceExhaustedError(
            absl::StrCat("no memory to receive ", h.payload_bytes, " bytes"));
        break;
      }
      status = ReadAll(fd, m.payload.get(), h.payload_bytes);
      if (!status.ok()) break;
    }
    if (h.kind == MessageKind::kGoodbye) {
      comm_internal::MutexLock lock(mu_);
      peers_[peer]->left = true;
      changed_.notify_all();
    } else if (h.kind == MessageKind::kAbort) {
      // Verbatim: the notice already names where the abort began.
      const std::string why(m.payload.get(), h.payload_bytes);
      AbortWith(absl::AbortedError(why), why, /*tell_peers=*/false);
    } else if (IsCollective(h.kind) || h.kind == MessageKind::kSend) {
      Deliver(peer, std::move(m));
    } else {
      status = absl::DataLossError("message of unknown kind");
      break;
    }
  }
  // Done and aborted in one step, so that nobody sees the reader gone but
  // the world not (yet) aborted.
  const std::string why =
      absl::StrCat(PeerName(peer), " disconnected: ", status.message());
  bool first = false;
  {
    comm_internal::MutexLock lock(mu_);
    peers_[peer]->reader_done = true;
    if (!peers_[peer]->left && !closing_.load(std::memory_order_acquire)) {
      first = RecordAbort(why);
    }
    changed_.notify_all();
  }
  if (first) TellPeers(why);
}

void TcpMesh::Deliver(int src, Message message) {
  const Channel channel = message.header.kind == MessageKind::kSend
                              ? Channel::kPointToPoint
                              : Channel::kCollective;
  comm_internal::MutexLock lock(mu_);
  queues_[QueueKey{message.header.group_id, src, channel}].push_back(
      std::move(message));
  changed_.notify_all();
}

void TcpMesh::AbortWith(absl::Status status, std::string notice,
                        bool tell_peers) {
  bool first = false;
  {
    comm_internal::MutexLock lock(mu_);
    first = RecordAbort(std::move(status), notice);
  }
  if (first && tell_peers) TellPeers(notice);
}

bool TcpMesh::RecordAbort(absl::Status status, std::string notice) {
  if (!abort_status_.ok()) return false;  // the first cause wins
  abort_status_ = std::move(status);
  abort_notice_ = std::move(notice);
  aborted_.store(true, std::memory_order_release);
  changed_.notify_all();
  return true;
}

bool TcpMesh::RecordAbort(const std::string& why) {
  return RecordAbort(absl::AbortedError(why), why);
}

void TcpMesh::TellPeers(const std::string& notice) {
  WireHeader header;
  header.kind = MessageKind::kAbort;
  header.payload_bytes = notice.size();
  const ByteRange ranges[] = {{&header, sizeof(header)},
                              {notice.data(), notice.size()}};
  for (int p = 0; p < size(); ++p) {
    if (p == rank_) continue;
    Peer& peer = *peers_[p];
    // A writer blocked on this connection stops once it sees the abort; if
    // it stopped midway it ended the stream, and the peer reads a
    // disconnection instead of this notice.
    std::unique_lock<std::mutex> write_lock(peer.write_mu, std::defer_lock);
    if (!LockWithin(write_lock, DeadlineAfter(kAbortNoticeTimeout)) ||
        peer.broken.load()) {
      continue;
    }
    if (!WriteAll(peer.socket.fd(), ranges, DeadlineAfter(kAbortNoticeTimeout))
             .ok()) {
      peer.broken.store(true);
      ::shutdown(peer.socket.fd(), SHUT_WR);
    }
  }
}

absl::Status TcpMesh::PeerGone(int peer) const {
  const Peer& p = *peers_[peer];
  if (p.left) {
    return absl::AbortedError(
        absl::StrCat(PeerName(peer), " has closed its communicator"));
  }
  if (p.reader_done) {
    return absl::AbortedError(absl::StrCat(PeerName(peer), " disconnected"));
  }
  return absl::OkStatus();
}

}  // namespace tessera::executor::tcp_internal
