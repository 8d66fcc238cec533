#include "executor/comm/internal/call_agreement.h"

#include <cstddef>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace tessera::executor::comm_internal {
namespace {

bool IsData(CollectiveKind kind) {
  return kind != CollectiveKind::kBarrier && kind != CollectiveKind::kSplit;
}
bool IsReduction(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce ||
         kind == CollectiveKind::kReduceScatter;
}
absl::string_view OpName(ReduceOp op) {
  return op == ReduceOp::kSum ? "sum" : "max";
}

}  // namespace

absl::string_view CollectiveName(CollectiveKind kind) {
  // In CollectiveKind's order.
  constexpr absl::string_view kNames[] = {
      "AllReduce", "AllGather", "ReduceScatter",
      "Broadcast", "Barrier",   "Split",
  };
  const auto i = static_cast<size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::string DescribeCall(const CallSignature& call, uint64_t seq,
                         absl::string_view group_name) {
  std::string text = absl::StrCat(CollectiveName(call.kind), " #", seq);
  if (IsData(call.kind)) {
    absl::StrAppend(&text, " (", DTypeName(call.dtype), " x ", call.count);
    if (IsReduction(call.kind)) absl::StrAppend(&text, ", ", OpName(call.op));
    if (call.kind == CollectiveKind::kBroadcast) {
      absl::StrAppend(&text, ", root ", call.root);
    }
    absl::StrAppend(&text, ")");
  }
  absl::StrAppend(&text, " on group ", group_name);
  return text;
}

absl::Status CheckCallsAgree(int size, CallOf call_of, uint64_t seq,
                             absl::string_view group_name,
                             RankNamer name_rank) {
  const CallSignature& first = call_of(0);
  auto what = [&] { return DescribeCall(first, seq, group_name); };
  auto mismatch = [&](int r, absl::string_view field, auto mine, auto theirs) {
    return absl::InvalidArgumentError(
        absl::StrCat(what(), ": ", name_rank(r), " passed ", field, " ", mine,
                     " but ", name_rank(0), " passed ", theirs));
  };
  for (int r = 0; r < size; ++r) {
    const CallSignature& c = call_of(r);
    if (!c.local.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(DescribeCall(c, seq, group_name), ": ", name_rank(r),
                       ": ", c.local.message()));
    }
    if (c.kind != first.kind) {
      return absl::InvalidArgumentError(absl::StrCat(
          what(), ": ", name_rank(r), " called ", CollectiveName(c.kind),
          " instead (collectives must be called in the same order)"));
    }
    if (!IsData(c.kind)) continue;
    if (c.dtype != first.dtype) {
      return mismatch(r, "dtype", DTypeName(c.dtype), DTypeName(first.dtype));
    }
    if (c.count != first.count) {
      return mismatch(r, "count", c.count, first.count);
    }
    if (IsReduction(c.kind) && c.op != first.op) {
      return mismatch(r, "op", OpName(c.op), OpName(first.op));
    }
    if (c.kind == CollectiveKind::kBroadcast && c.root != first.root) {
      return mismatch(r, "root", c.root, first.root);
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera::executor::comm_internal
