// How the processes of an NCCL world share rank 0's ncclUniqueId: through a
// rendezvous file, as the TCP world shares rank 0's address (the file is the
// only thing agents relay between hosts). Rank 0 writes the id atomically
// (temp file + rename, executor/comm/internal/tcp_rendezvous.h's helper), so
// readers never see half of it; the others poll until it appears. The file
// names the world size, so a rank started with another --ranks fails instead
// of hanging in ncclCommInitRank. Plain C++: no NCCL needed to build or test.
//
// File format (text):
//   tessera-nccl-id v1 world_size=<n>
//   <256 lowercase hex digits: the 128 bytes of the id>
//
//   // rank 0
//   TESSERA_RETURN_IF_ERROR(PublishNcclId(path, id_bytes, world_size));
//   // other ranks
//   TESSERA_ASSIGN_OR_RETURN(std::vector<uint8_t> id,
//                            AwaitNcclId(path, world_size, absl::Minutes(5)));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace tessera::executor {

// NCCL_UNIQUE_ID_BYTES.
inline constexpr size_t kNcclIdBytes = 128;

// The file's text for `id` (kNcclIdBytes bytes) and world_size.
std::string FormatNcclIdFile(absl::Span<const uint8_t> id, int world_size);

// The id in `text`. INVALID_ARGUMENT naming the problem when the text is not
// a whole id file or was written for another world size.
absl::StatusOr<std::vector<uint8_t>> ParseNcclIdFile(absl::string_view text,
                                                     int world_size);

// Rank 0: writes the file atomically (INVALID_ARGUMENT for an id of the
// wrong size; UNAVAILABLE when the file cannot be written).
absl::Status PublishNcclId(const std::string& path,
                           absl::Span<const uint8_t> id, int world_size);

// The other ranks: reads the file every `poll` until it holds an id, then
// parses it. DEADLINE_EXCEEDED naming the path when nothing appeared within
// `timeout`; INVALID_ARGUMENT when the file is not an id file for this world.
absl::StatusOr<std::vector<uint8_t>> AwaitNcclId(
    const std::string& path, int world_size, absl::Duration timeout,
    absl::Duration poll = absl::Milliseconds(20));

}  // namespace tessera::executor
