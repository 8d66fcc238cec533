#include "dashboard/dashboard_access.h"

#include "absl/strings/str_cat.h"

namespace tessera::dashboard {

absl::Status DashboardAccess::MayRead(absl::string_view authorization) const {
  if (callers_ == nullptr) return absl::OkStatus();
  const Principal* who = callers_->ByAuthorization(authorization);
  if (who == nullptr) {
    return absl::UnauthenticatedError(
        "this planner's dashboard needs a token: the one its principals file "
        "or --auth-token-file gives you (Authorization: Bearer TOKEN)");
  }
  switch (who->role) {
    case Role::kUser:
    case Role::kCommandUser:
    case Role::kAdmin:
    case Role::kAnyone:
      return absl::OkStatus();
    case Role::kAgent:
      return absl::PermissionDeniedError(absl::StrCat(
          "agent ", who->name,
          " may not read the dashboard: agents act only as themselves; a "
          "user, command-user or admin token reads it"));
    case Role::kUnknown:
      break;
  }
  return absl::UnauthenticatedError("unknown caller");
}

}  // namespace tessera::dashboard
