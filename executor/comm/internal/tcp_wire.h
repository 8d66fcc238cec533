// What TcpCommunicator's processes say to each other on one connection: a
// fixed 56-byte header per message, then `payload_bytes` bytes of payload
// (tensor data, or an error's text when has_error is set). Headers travel
// as raw little-endian structs (every supported host is little-endian), and
// every message of a collective repeats the caller's whole call (kind,
// dtype, count, op, root, color, key), so each receiver can check it against
// its own.
//
//   WireHeader h = CollectiveHeader(group_id, seq, MessageKind::kAllReduce);
//   h.dtype = static_cast<uint8_t>(DType::kF32);
//   h.count = 1024;
//   h.payload_bytes = block.bytes();
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "absl/strings/string_view.h"
#include "executor/comm/internal/call_agreement.h"

namespace tessera::executor::tcp_internal {

static_assert(std::endian::native == std::endian::little,
              "the TCP wire format is little-endian");

constexpr uint32_t kWireMagic = 0x41525354;  // "TSRA" in memory
// Bumped whenever the header or the handshake changes.
constexpr uint32_t kWireVersion = 1;

enum class MessageKind : uint8_t {
  // One rank's part of a collective (channel: the group's collectives).
  kAllReduce = 1,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kBarrier,
  kSplit,
  // A Send (channel: the group's point-to-point messages).
  kSend,
  // Connection control: the sender closes its communicator (no more
  // messages follow), or aborts the world (payload: the cause).
  kGoodbye,
  kAbort,
};
// Whether messages of `kind` belong to a collective.
bool IsCollective(MessageKind kind);
// The kind of the messages of a collective, and back: `kind` must be one
// for which IsCollective holds.
MessageKind WireKind(comm_internal::CollectiveKind kind);
comm_internal::CollectiveKind CollectiveOf(MessageKind kind);

struct WireHeader {
  uint32_t magic = kWireMagic;
  MessageKind kind = MessageKind::kBarrier;
  uint8_t dtype = 0;      // DType of the call
  uint8_t op = 0;         // ReduceOp of the call
  uint8_t step = 0;       // phase of the collective: 0 arrival, 1 result
  uint8_t has_error = 0;  // payload is the sender's argument error
  uint8_t reserved[3] = {};
  int32_t root = 0;   // Broadcast
  int32_t color = 0;  // Split
  int32_t key = 0;    // Split
  uint64_t group_id = 0;
  uint64_t seq = 0;   // collective number in the group / Send number
  int64_t count = 0;  // the call's count (as the in-process rendezvous)
  uint64_t payload_bytes = 0;
};
static_assert(sizeof(WireHeader) == 56);
static_assert(std::is_trivially_copyable_v<WireHeader>);

// One received message: its header and its payload (owned; suitably aligned
// for any dtype).
struct Message {
  WireHeader header;
  std::unique_ptr<char[]> payload;
};

// FNV-1a 64 of a group's name: the group id every member derives alike.
uint64_t GroupId(absl::string_view group_name);

}  // namespace tessera::executor::tcp_internal
