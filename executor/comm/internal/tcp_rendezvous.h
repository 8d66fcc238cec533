// How the processes of a TCP world find each other and form a full mesh
// (one connection per pair of ranks), with a file as the only shared thing:
//
//  1. Every rank listens on bind_host (rank 0 on the given port, the others
//     on an ephemeral one).
//  2. Rank 0 writes "host:port\n" to the rendezvous file (temp file +
//     rename, so readers never see half of it). The others poll the file
//     and connect to rank 0, retrying while it refuses (a stale file from an
//     earlier run is re-read on every try), and send a hello: their rank,
//     the world size and their own listening address.
//  3. Once all world_size - 1 have said hello, rank 0 answers each with the
//     address table of every rank and a random nonce for this world (or
//     with an error that every rank returns: a world size or rank that does
//     not fit), and removes the file.
//  4. Each rank r then connects to every rank 0 < i < r (higher connects to
//     lower, like the first connection to rank 0) and introduces itself with
//     the nonce and its rank, and accepts one connection from every rank
//     above it. The kernel's listen backlog completes a connect before the
//     accept, so the order cannot deadlock. Connections that do not carry
//     this world's nonce are closed and ignored.
//
//   TESSERA_ASSIGN_OR_RETURN(std::vector<Socket> peers,
//                            FormMesh(rank, world_size, options));
//   // peers[r] is the connection to world rank r (invalid at r == rank).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "executor/comm/internal/tcp_socket.h"

namespace tessera::executor::tcp_internal {

struct MeshOptions {
  std::string rendezvous_file;
  std::string bind_host;
  int port = 0;                // rank 0's listening port; 0: ephemeral
  std::string advertise_host;  // what the others connect to
  Deadline deadline;           // for every step of the rendezvous
};

// The connected sockets of a full mesh by world rank. Errors name the step
// and the ranks concerned: DEADLINE_EXCEEDED (the file never appeared, a
// rank never connected), INVALID_ARGUMENT (ranks disagree on the world
// size, two processes claim one rank), UNAVAILABLE (cannot listen, a
// connection broke).
absl::StatusOr<std::vector<Socket>> FormMesh(int rank, int world_size,
                                             const MeshOptions& options);

// Writes `content` to `path` atomically: a temporary file in the same
// folder, then rename(2).
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view content);

}  // namespace tessera::executor::tcp_internal
