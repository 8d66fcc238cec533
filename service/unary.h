// The shape of every unary handler of the callback API: run the planner's
// method, copy its value into the response, finish with its status.
//
//   return FinishUnary(context, response,
//                      [&] { return planner_->GetStudy(request->study_id());
//                      });
#pragma once

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "service/background_pool.h"
#include "service/grpc_status.h"

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

// As FinishUnary, but `call` runs on `pool` (background_pool.h), off gRPC's
// threads; `what` names the call in the refusal. RESOURCE_EXHAUSTED at once,
// without running it, when the pool's queue is full; CANCELLED, without
// running it, when the caller gave up while it waited. The request and
// response `call` uses live until Finish.
template <typename Response, typename Call>
grpc::ServerUnaryReactor* FinishUnaryInPool(
    BackgroundPool& pool, absl::string_view what,
    grpc::CallbackServerContext* context, Response* response, Call call) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const bool queued = pool.TrySubmit(
      [reactor, context, response, call = std::move(call)]() mutable {
        if (context->IsCancelled()) {
          reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                                       "the caller gave up while it waited"));
          return;
        }
        absl::StatusOr<Response> result = call();
        if (result.ok()) *response = *std::move(result);
        reactor->Finish(ToGrpcStatus(result.status()));
      });
  if (!queued) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                     absl::StrCat("planner busy: ", what, " calls ",
                                  pool.Load(), "; retry in a few seconds")));
  }
  return reactor;
}

// As FinishUnaryStatus, on `pool` (see FinishUnaryInPool).
template <typename Call>
grpc::ServerUnaryReactor* FinishUnaryStatusInPool(
    BackgroundPool& pool, absl::string_view what,
    grpc::CallbackServerContext* context, Call call) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const bool queued =
      pool.TrySubmit([reactor, context, call = std::move(call)]() mutable {
        if (context->IsCancelled()) {
          reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                                       "the caller gave up while it waited"));
          return;
        }
        reactor->Finish(ToGrpcStatus(call()));
      });
  if (!queued) {
    reactor->Finish(
        grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                     absl::StrCat("planner busy: ", what, " calls ",
                                  pool.Load(), "; retry in a few seconds")));
  }
  return reactor;
}

}  // namespace tessera::service
