#include "executor/comm/internal/call_context.h"

#include "absl/strings/str_cat.h"

namespace tessera::executor::comm_internal {

std::string DescribeSend(const Tensor& buf, absl::string_view to,
                         absl::string_view group_name) {
  return absl::StrCat("Send of ", DTypeName(buf.dtype), " x ", buf.numel,
                      " to ", to, " on group ", group_name);
}

std::string DescribeRecv(const Tensor& buf, absl::string_view from,
                         absl::string_view at, absl::string_view group_name) {
  return absl::StrCat("Recv of ", DTypeName(buf.dtype), " x ", buf.numel,
                      " from ", from, " at ", at, " on group ", group_name);
}

absl::Status Annotate(absl::Status status, absl::string_view context) {
  if (status.ok() || status.code() == absl::StatusCode::kAborted) {
    return status;
  }
  return absl::Status(status.code(),
                      absl::StrCat(context, ": ", status.message()));
}

}  // namespace tessera::executor::comm_internal
