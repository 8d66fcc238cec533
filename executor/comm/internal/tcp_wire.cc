#include "executor/comm/internal/tcp_wire.h"

namespace tessera::executor::tcp_internal {

bool IsCollective(MessageKind kind) {
  return kind >= MessageKind::kAllReduce && kind <= MessageKind::kSplit;
}

namespace {

using comm_internal::CollectiveKind;

// Every collective and the kind of its messages.
struct KindPair {
  CollectiveKind collective;
  MessageKind wire;
};
constexpr KindPair kCollectiveKinds[] = {
    {CollectiveKind::kAllReduce, MessageKind::kAllReduce},
    {CollectiveKind::kAllGather, MessageKind::kAllGather},
    {CollectiveKind::kReduceScatter, MessageKind::kReduceScatter},
    {CollectiveKind::kBroadcast, MessageKind::kBroadcast},
    {CollectiveKind::kBarrier, MessageKind::kBarrier},
    {CollectiveKind::kSplit, MessageKind::kSplit},
};

}  // namespace

MessageKind WireKind(CollectiveKind kind) {
  for (const KindPair& pair : kCollectiveKinds) {
    if (pair.collective == kind) return pair.wire;
  }
  return MessageKind::kBarrier;  // unreachable: every collective is listed
}

CollectiveKind CollectiveOf(MessageKind kind) {
  for (const KindPair& pair : kCollectiveKinds) {
    if (pair.wire == kind) return pair.collective;
  }
  return CollectiveKind::kBarrier;  // not a collective: outside the contract
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
