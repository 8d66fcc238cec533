// What each role may do (service/access.h), every role against every
// check: agents only as themselves and only the AgentService, users and
// admins the PlannerService, cancelling by owner or admin, calibrations by
// admins; a caller not told apart (anyone) everything; an unknown caller
// (neither a known token nor a certificate) nothing.
#include "service/access.h"

#include "gtest/gtest.h"

namespace tessera::service {
namespace {

const Principal kAgent{.name = "node-1", .role = Role::kAgent};
const Principal kAlice{.name = "alice", .role = Role::kUser};
const Principal kOps{.name = "ops", .role = Role::kAdmin};
const Principal kAnyone{};
const Principal kUnknown{.name = "", .role = Role::kUnknown};

TEST(AccessTest, EveryRoleAgainstEveryCheck) {
  EXPECT_TRUE(MayActAsAgent(kAgent, "node-1").ok());
  EXPECT_TRUE(MayActAsAgent(kAnyone, "node-9").ok());
  for (const Principal& p : {kAlice, kOps, kUnknown}) {
    EXPECT_TRUE(absl::IsPermissionDenied(MayActAsAgent(p, "node-1")))
        << RoleName(p.role);
  }
  EXPECT_TRUE(absl::IsPermissionDenied(MayActAsAgent(kAgent, "node-2")));

  for (const Principal& p : {kAlice, kOps, kAnyone}) {
    EXPECT_TRUE(MayUsePlannerService(p, "ListStudies").ok())
        << RoleName(p.role);
  }
  for (const Principal& p : {kAgent, kUnknown}) {
    EXPECT_TRUE(absl::IsPermissionDenied(MayUsePlannerService(p, "Plan")))
        << RoleName(p.role);
  }

  EXPECT_TRUE(MayCancelStudy(kAlice, 1, "alice").ok());
  EXPECT_TRUE(MayCancelStudy(kOps, 1, "alice").ok());
  EXPECT_TRUE(MayCancelStudy(kAnyone, 1, "").ok());
  EXPECT_EQ(MayCancelStudy(kAlice, 7, "").message(),
            "user alice may not cancel study 7: its submitter is not known "
            "(its owner or an admin may)");
  for (const Principal& p : {kAgent, kUnknown}) {
    EXPECT_TRUE(absl::IsPermissionDenied(MayCancelStudy(p, 1, p.name)))
        << RoleName(p.role);
  }

  EXPECT_TRUE(MayChangeCalibrations(kOps, "ImportCalibration").ok());
  EXPECT_TRUE(MayChangeCalibrations(kAnyone, "ImportCalibration").ok());
  for (const Principal& p : {kAlice, kAgent, kUnknown}) {
    EXPECT_TRUE(
        absl::IsPermissionDenied(MayChangeCalibrations(p, "ImportCalibration")))
        << RoleName(p.role);
  }
}

// Issue 28, attack 1: any user's study ran its command on every agent.
// Submitting a command study needs the role that says so.
TEST(AccessTest, OnlyCommandUsersAndAdminsSubmitCommandStudies) {
  const Principal carol{.name = "carol", .role = Role::kCommandUser};
  EXPECT_TRUE(MaySubmitCommandStudy(carol).ok());
  EXPECT_TRUE(MaySubmitCommandStudy(kOps).ok());
  EXPECT_TRUE(MaySubmitCommandStudy(kAnyone).ok());
  EXPECT_EQ(MaySubmitCommandStudy(kAlice).message(),
            "user alice may not submit a study of backend \"command\": its "
            "command runs on the agents' hosts (roles command-user and admin "
            "may; each agent runs only the commands its own --command-policy "
            "allows)");
  for (const Principal& p : {kAgent, kUnknown}) {
    EXPECT_TRUE(absl::IsPermissionDenied(MaySubmitCommandStudy(p)))
        << RoleName(p.role);
  }
  // Otherwise a command-user is a user: it cancels only its own studies.
  EXPECT_TRUE(MayUsePlannerService(carol, "SubmitStudy").ok());
  EXPECT_TRUE(MayCancelStudy(carol, 1, "carol").ok());
  EXPECT_TRUE(absl::IsPermissionDenied(MayCancelStudy(carol, 1, "alice")));
  EXPECT_TRUE(absl::IsPermissionDenied(MayActAsAgent(carol, "carol")));
  EXPECT_TRUE(absl::IsPermissionDenied(
      MayChangeCalibrations(carol, "ImportCalibration")));
}

}  // namespace
}  // namespace tessera::service
