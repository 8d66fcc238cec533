// How both communicators name a call in their errors, word for word alike:
// a point-to-point call is "Send of f32 x 4 to rank 1 on group world" or
// "Recv of f32 x 4 from rank 0 at rank 1 on group world", and an error gets
// its call in front ("...: buf.data is null"). An ABORTED status is left as
// it is: after an abort every operation returns the abort's cause.
//
//   const std::string context =
//       DescribeSend(buf, RankName(peer), group_name());
//   TESSERA_RETURN_IF_ERROR(Annotate(CheckTensor("buf", buf), context));
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "executor/tensor.h"

namespace tessera::executor::comm_internal {

// "Send of <dtype> x <numel> to <to> on group <group_name>".
std::string DescribeSend(const Tensor& buf, absl::string_view to,
                         absl::string_view group_name);

// "Recv of <dtype> x <numel> from <from> at <at> on group <group_name>".
std::string DescribeRecv(const Tensor& buf, absl::string_view from,
                         absl::string_view at, absl::string_view group_name);

// `status` with "<context>: " before its message; OK and ABORTED unchanged.
absl::Status Annotate(absl::Status status, absl::string_view context);

}  // namespace tessera::executor::comm_internal
