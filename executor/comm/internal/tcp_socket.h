// POSIX TCP sockets for TcpCommunicator: an owning descriptor, listening,
// connecting and accepting with deadlines, and whole-buffer reads and writes.
// Writes use MSG_NOSIGNAL (a dead peer is an error, never SIGPIPE) and poll
// while the kernel buffer is full, so they honour a deadline and a stop
// check; every socket is close-on-exec and has TCP_NODELAY.
//
//   TESSERA_ASSIGN_OR_RETURN(Socket listener, Listen("127.0.0.1", 0));
//   TESSERA_ASSIGN_OR_RETURN(int port, LocalPort(listener));
//   TESSERA_ASSIGN_OR_RETURN(Socket peer,
//       Connect(HostPort{"127.0.0.1", port}, DeadlineAfter(absl::Seconds(5))));
//   TESSERA_RETURN_IF_ERROR(WriteAll(peer.fd(), {{data, bytes}}, deadline));
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace tessera::executor::tcp_internal {

using Clock = std::chrono::steady_clock;
// When a wait gives up; nullopt waits forever.
using Deadline = std::optional<Clock::time_point>;

// Now + timeout; InfiniteDuration() gives no deadline.
Deadline DeadlineAfter(absl::Duration timeout);
// True once the deadline has passed.
bool Expired(const Deadline& deadline);

// An owned socket descriptor, closed on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { Close(); }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Close();

 private:
  int fd_ = -1;
};

// A listening address as the rendezvous file and the address table hold it.
struct HostPort {
  std::string host;
  int port = 0;
};
// "host:port", or "[host]:port" when host is an IPv6 literal.
std::string FormatHostPort(const HostPort& address);
// Parses FormatHostPort's output (surrounding whitespace ignored);
// INVALID_ARGUMENT naming `text` otherwise.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text);
// Whether `host` is a wildcard bind address ("0.0.0.0", "::", "").
bool IsWildcardHost(absl::string_view host);

// A socket listening on host:port (port 0: the kernel picks one), with
// SO_REUSEADDR. UNAVAILABLE naming the address when it cannot bind.
absl::StatusOr<Socket> Listen(const std::string& host, int port);
// The port a bound socket got.
absl::StatusOr<int> LocalPort(const Socket& socket);
// One connection attempt, bounded by the deadline. UNAVAILABLE when refused
// or unreachable (the caller may retry), DEADLINE_EXCEEDED when the
// deadline passed first.
absl::StatusOr<Socket> Connect(const HostPort& address,
                               const Deadline& deadline);
// The next connection on `listener`; DEADLINE_EXCEEDED when none came.
absl::StatusOr<Socket> Accept(const Socket& listener, const Deadline& deadline);

// One piece of a message to write.
struct ByteRange {
  const void* data;
  size_t bytes;
};
// Writes every range in order. Polls while the kernel buffer is full,
// returning DEADLINE_EXCEEDED past the deadline and CANCELLED as soon as
// stop() is true; UNAVAILABLE with the system's reason when the connection
// is broken (EPIPE, ECONNRESET...).
absl::Status WriteAll(
    int fd, absl::Span<const ByteRange> ranges, const Deadline& deadline,
    absl::FunctionRef<bool()> stop = [] { return false; });
// Reads exactly `bytes` bytes, blocking (for reader threads; a shutdown()
// of the socket wakes it). UNAVAILABLE "connection closed by peer" on end of
// stream, with the system's reason on an error.
absl::Status ReadAll(int fd, void* data, size_t bytes);
// ReadAll bounded by a deadline (handshakes): DEADLINE_EXCEEDED past it.
absl::Status ReadAllBefore(int fd, void* data, size_t bytes,
                           const Deadline& deadline);

// The bytes sent on `fd` that the peer has not acknowledged yet (SIOCOUTQ);
// 0 when unknown.
size_t UnacknowledgedBytes(int fd);

}  // namespace tessera::executor::tcp_internal
