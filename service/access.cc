#include "service/access.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tessera::service {
namespace {

std::string Who(const Principal& caller) {
  return absl::StrCat(RoleName(caller.role), " ", caller.name);
}

}  // namespace

absl::Status MayActAsAgent(const Principal& caller,
                           absl::string_view agent_id) {
  switch (caller.role) {
    case Role::kAnyone:
      return absl::OkStatus();
    case Role::kAgent:
      if (caller.name == agent_id) return absl::OkStatus();
      return absl::PermissionDeniedError(
          absl::StrCat(Who(caller), " may act only as agent ", caller.name,
                       ", not as agent '", agent_id, "'"));
    case Role::kUser:
    case Role::kCommandUser:
    case Role::kAdmin:
    case Role::kUnknown:
      break;
  }
  return absl::PermissionDeniedError(
      absl::StrCat(Who(caller),
                   " may not call the AgentService (agents only: a "
                   "principal of role agent, or an agent's client "
                   "certificate)"));
}

absl::Status MayUsePlannerService(const Principal& caller,
                                  absl::string_view rpc) {
  if (caller.role == Role::kUser || caller.role == Role::kCommandUser ||
      caller.role == Role::kAdmin || caller.role == Role::kAnyone) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(Who(caller), " may not call ", rpc,
                   " (PlannerService is for users and admins)"));
}

absl::Status MayChangeCalibrations(const Principal& caller,
                                   absl::string_view rpc) {
  if (caller.role == Role::kAnyone || caller.role == Role::kAdmin) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat(Who(caller), " may not call ", rpc,
                   ": it changes the calibration every study of the GPU "
                   "plans with (admins only)"));
}

absl::Status MaySubmitCommandStudy(const Principal& caller) {
  TESSERA_RETURN_IF_ERROR(MayUsePlannerService(caller, "SubmitStudy"));
  if (caller.role == Role::kCommandUser || caller.role == Role::kAdmin ||
      caller.role == Role::kAnyone) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      Who(caller),
      " may not submit a study of backend \"command\": its command runs on "
      "the agents' hosts (roles command-user and admin may; each agent runs "
      "only the commands its own --command-policy allows)"));
}

absl::Status MayCancelStudy(const Principal& caller, int64_t study_id,
                            absl::string_view owner) {
  TESSERA_RETURN_IF_ERROR(MayUsePlannerService(caller, "CancelStudy"));
  if (caller.role == Role::kAnyone || caller.role == Role::kAdmin) {
    return absl::OkStatus();
  }
  if (!owner.empty() && owner == caller.name) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat(Who(caller), " may not cancel study ", study_id, ": ",
                   owner.empty() ? std::string("its submitter is not known")
                                 : absl::StrCat("it is ", owner, "'s"),
                   " (its owner or an admin may)"));
}

}  // namespace tessera::service
