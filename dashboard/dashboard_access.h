// Who may read tessera-planner's dashboard: the callers the planner's
// gRPC port lets in (proto/principals.h), by the same bearer token in the
// request's Authorization header. Users, command-users and admins read
// every study (the dashboard only reads); an agent's token is refused (it
// may act only as its agent, never read the studies); a planner that does
// not tell callers apart (no TLS: open) lets everyone read.
//
//   DashboardAccess access(options.callers);
//   absl::Status s = access.MayRead(authorization_header);
//   // UNAUTHENTICATED: 401 and a prompt for the token; PERMISSION_DENIED: 403
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/principals.h"

namespace tessera::dashboard {

class DashboardAccess {
 public:
  // `callers` null: the planner does not tell callers apart (open).
  explicit DashboardAccess(std::shared_ptr<const Callers> callers)
      : callers_(std::move(callers)) {}

  // OK for a caller who may read the studies; UNAUTHENTICATED without a
  // token the planner knows ("" or anything but "Bearer <token>");
  // PERMISSION_DENIED naming the agent for an agent's token.
  absl::Status MayRead(absl::string_view authorization) const;

  // Whether a token is needed at all.
  bool open() const { return callers_ == nullptr; }

 private:
  std::shared_ptr<const Callers> callers_;
};

}  // namespace tessera::dashboard
