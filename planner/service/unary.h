// The shape of every unary handler of the callback API: run the planner's
// method, copy its value into the response, finish with its status.
//
//   return FinishUnary(context, response,
//                      [&] { return planner_->GetStudy(request->study_id());
//                      });
#pragma once

#include <utility>

#include "absl/status/statusor.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "planner/service/grpc_status.h"

namespace tessera::service {

// `call` returns absl::StatusOr<Response>; on OK its value is moved into
// *response.
template <typename Response, typename Call>
grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* context,
                                      Response* response, Call&& call) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<Response> result = std::forward<Call>(call)();
  if (result.ok()) *response = *std::move(result);
  reactor->Finish(ToGrpcStatus(result.status()));
  return reactor;
}

// For calls that return a plain absl::Status (the response stays empty).
template <typename Call>
grpc::ServerUnaryReactor* FinishUnaryStatus(
    grpc::CallbackServerContext* context, Call&& call) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(std::forward<Call>(call)()));
  return reactor;
}

}  // namespace tessera::service
