#include "executor/comm/internal/tcp_wire.h"

namespace tessera::executor::tcp_internal {

absl::string_view MessageKindName(MessageKind kind) {
  switch (kind) {
    case MessageKind::kAllReduce:
      return "AllReduce";
    case MessageKind::kAllGather:
      return "AllGather";
    case MessageKind::kReduceScatter:
      return "ReduceScatter";
    case MessageKind::kBroadcast:
      return "Broadcast";
    case MessageKind::kBarrier:
      return "Barrier";
    case MessageKind::kSplit:
      return "Split";
    case MessageKind::kSend:
      return "Send";
    case MessageKind::kGoodbye:
      return "Goodbye";
    case MessageKind::kAbort:
      return "Abort";
  }
  return "?";
}

bool IsCollective(MessageKind kind) {
  return kind >= MessageKind::kAllReduce && kind <= MessageKind::kSplit;
}

uint64_t GroupId(absl::string_view group_name) {
  // FNV-1a, 64-bit (Fowler, Noll, Vo; offset basis and prime from the spec).
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : group_name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace tessera::executor::tcp_internal
