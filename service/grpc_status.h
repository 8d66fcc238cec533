// absl::Status <-> grpc::Status, code for code (the canonical codes are the
// same numbers), message as is.
//
//   reactor->Finish(ToGrpcStatus(planner.CancelStudy(id).status()));
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace tessera::service {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace tessera::service
