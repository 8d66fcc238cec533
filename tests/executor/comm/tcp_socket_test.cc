// The socket layer under TcpCommunicator: addresses, the atomic rendezvous
// file, writes to a dead peer (an error, never SIGPIPE), writes to a peer
// that does not read (DEADLINE_EXCEEDED, or CANCELLED when stopped), reads
// that see the end of a stream, group ids, and the collectives' message
// kinds.
#include "executor/comm/internal/tcp_socket.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "executor/comm/internal/tcp_rendezvous.h"
#include "executor/comm/internal/tcp_wire.h"
#include "gtest/gtest.h"

namespace tessera::executor::tcp_internal {
namespace {

// A connected pair of loopback sockets.
struct Pair {
  Socket a, b;
};
Pair Connected() {
  absl::StatusOr<Socket> listener = Listen("127.0.0.1", 0);
  EXPECT_TRUE(listener.ok()) << listener.status();
  const int port = *LocalPort(*listener);
  absl::StatusOr<Socket> a =
      Connect(HostPort{"127.0.0.1", port}, DeadlineAfter(absl::Seconds(5)));
  EXPECT_TRUE(a.ok()) << a.status();
  absl::StatusOr<Socket> b = Accept(*listener, DeadlineAfter(absl::Seconds(5)));
  EXPECT_TRUE(b.ok()) << b.status();
  return Pair{*std::move(a), *std::move(b)};
}

TEST(TcpSocketTest, HostPortRoundTrips) {
  EXPECT_EQ(FormatHostPort({"127.0.0.1", 80}), "127.0.0.1:80");
  EXPECT_EQ(FormatHostPort({"::1", 8080}), "[::1]:8080");
  for (const HostPort& a :
       {HostPort{"node-7.cluster", 29500}, HostPort{"::1", 1}}) {
    absl::StatusOr<HostPort> parsed = ParseHostPort(FormatHostPort(a) + "\n");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->host, a.host);
    EXPECT_EQ(parsed->port, a.port);
  }
  for (const char* bad : {"", "host", ":80", "host:0", "host:65536", "h:x"}) {
    EXPECT_EQ(ParseHostPort(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_TRUE(IsWildcardHost("0.0.0.0"));
  EXPECT_TRUE(IsWildcardHost("::"));
  EXPECT_FALSE(IsWildcardHost("127.0.0.1"));
}

TEST(TcpSocketTest, RendezvousFileIsReplacedWhole) {
  const std::string path = ::testing::TempDir() + "/tcp_socket_rendezvous";
  ASSERT_TRUE(WriteFileAtomically(path, "old:1\n").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "127.0.0.1:4242\n").ok());
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), "127.0.0.1:4242\n");
  ::unlink(path.c_str());
  EXPECT_EQ(WriteFileAtomically("/nonexistent-dir/x", "a").code(),
            absl::StatusCode::kUnavailable);
}

TEST(TcpSocketTest, WritingToAClosedPeerIsAnErrorNotSigpipe) {
  // SIGPIPE's default action would kill this test process.
  struct sigaction old_action;
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ASSERT_EQ(::sigaction(SIGPIPE, &default_action, &old_action), 0);
  Pair pair = Connected();
  pair.b.Close();
  std::vector<char> data(1 << 20, 'x');
  const ByteRange range{data.data(), data.size()};
  absl::Status s;
  for (int i = 0; i < 100 && s.ok(); ++i) {  // the first write may still fit
    s = WriteAll(pair.a.fd(), {&range, 1}, DeadlineAfter(absl::Seconds(5)));
  }
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  ::sigaction(SIGPIPE, &old_action, nullptr);
}

TEST(TcpSocketTest, WritingToAPeerThatDoesNotReadTimesOutOrStops) {
  Pair pair = Connected();
  std::vector<char> data(64 << 20, 'x');  // more than any socket buffer
  const ByteRange range{data.data(), data.size()};
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = WriteAll(pair.a.fd(), {&range, 1},
                            DeadlineAfter(absl::Milliseconds(300)));
  const double waited_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_GE(waited_s, 0.3);
  EXPECT_LT(waited_s, 5);
  Pair other = Connected();
  s = WriteAll(other.a.fd(), {&range, 1}, DeadlineAfter(absl::Seconds(60)),
               [] { return true; });
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
}

TEST(TcpSocketTest, ReadsSeeTheEndOfTheStream) {
  Pair pair = Connected();
  const char hello[] = "hello";
  const ByteRange range{hello, 5};
  ASSERT_TRUE(WriteAll(pair.a.fd(), {&range, 1}, std::nullopt).ok());
  ::shutdown(pair.a.fd(), SHUT_WR);
  char got[5];
  ASSERT_TRUE(ReadAll(pair.b.fd(), got, 5).ok());
  EXPECT_EQ(std::string(got, 5), "hello");
  const absl::Status eof = ReadAll(pair.b.fd(), got, 1);
  EXPECT_EQ(eof.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(eof.message(), "connection closed by peer");
  // And a bounded read gives up at its deadline.
  Pair quiet = Connected();
  EXPECT_EQ(ReadAllBefore(quiet.b.fd(), got, 1,
                          DeadlineAfter(absl::Milliseconds(100)))
                .code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(TcpSocketTest, ConnectToANonListeningPortIsUnavailable) {
  int port = 0;
  {
    absl::StatusOr<Socket> probe = Listen("127.0.0.1", 0);
    ASSERT_TRUE(probe.ok());
    port = *LocalPort(*probe);
  }
  EXPECT_EQ(
      Connect(HostPort{"127.0.0.1", port}, DeadlineAfter(absl::Seconds(5)))
          .status()
          .code(),
      absl::StatusCode::kUnavailable);
}

TEST(TcpSocketTest, GroupIdsAreFnv1a) {
  // FNV-1a 64 test vectors (Fowler, Noll, Vo reference: "" and "a").
  EXPECT_EQ(GroupId(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(GroupId("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_NE(GroupId("world/split#0:color=1"), GroupId("world/split#0:color=2"));
}

TEST(TcpSocketTest, EveryCollectiveHasItsOwnMessageKind) {
  using comm_internal::CollectiveKind;
  const CollectiveKind kinds[] = {
      CollectiveKind::kAllReduce,     CollectiveKind::kAllGather,
      CollectiveKind::kReduceScatter, CollectiveKind::kBroadcast,
      CollectiveKind::kBarrier,       CollectiveKind::kSplit};
  std::vector<MessageKind> wire;
  for (CollectiveKind kind : kinds) {
    const MessageKind w = WireKind(kind);
    EXPECT_TRUE(IsCollective(w)) << comm_internal::CollectiveName(kind);
    EXPECT_EQ(CollectiveOf(w), kind) << comm_internal::CollectiveName(kind);
    for (MessageKind seen : wire) EXPECT_NE(seen, w);
    wire.push_back(w);
  }
  EXPECT_EQ(WireKind(CollectiveKind::kAllReduce), MessageKind::kAllReduce);
  EXPECT_EQ(WireKind(CollectiveKind::kSplit), MessageKind::kSplit);
  for (MessageKind other :
       {MessageKind::kSend, MessageKind::kGoodbye, MessageKind::kAbort}) {
    EXPECT_FALSE(IsCollective(other));
  }
}

}  // namespace
}  // namespace tessera::executor::tcp_internal
