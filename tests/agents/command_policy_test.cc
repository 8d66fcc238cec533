// The agent's command policy (agents/command_policy.h): the file's rules and
// errors, and which commands it allows.
#include "agents/command_policy.h"

#include <sys/stat.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "agents/files.h"
#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

CommandPolicy ParseOrDie(const std::string& text) {
  absl::StatusOr<CommandPolicy> p = ParseCommandPolicy(text, "policy");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : CommandPolicy{};
}

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<CommandPolicy> p = ParseCommandPolicy(text, "policy");
  EXPECT_FALSE(p.ok()) << text;
  return p.ok() ? "" : std::string(p.status().message());
}

TEST(CommandPolicyTest, TheFilesRulesAreRead) {
  const CommandPolicy p = ParseOrDie(
      "# what this agent runs\n"
      "run-as nobody\n"
      "\n"
      "template  /usr/bin/torchrun --nnodes {nodes} /opt/train.py {config}\n"
      "program /opt/train/run.sh\n");
  ASSERT_TRUE(p.run_as.has_value());
  EXPECT_EQ(p.run_as->name, "nobody");
  EXPECT_NE(p.run_as->uid, 0u);
  EXPECT_EQ(p.templates, (std::vector<std::string>{
                             "/usr/bin/torchrun --nnodes {nodes} "
                             "/opt/train.py {config}"}));
  EXPECT_EQ(p.programs, (std::vector<std::string>{"/opt/train/run.sh"}));
  const CommandPolicy numeric = ParseOrDie("run-as 1234:5678\n");
  EXPECT_EQ(numeric.run_as->uid, 1234u);
  EXPECT_EQ(numeric.run_as->gid, 5678u);
}

TEST(CommandPolicyTest, BadRulesAreRefusedNamingTheLine) {
  EXPECT_EQ(ErrorOf("allow /bin/sh\n"),
            "policy: line 1: unknown rule 'allow' (run-as, template or "
            "program)");
  EXPECT_EQ(ErrorOf("\nprogram train.sh\n"),
            "policy: line 2: program 'train.sh' must be one absolute path");
  EXPECT_EQ(ErrorOf("template\n"), "policy: line 1: 'template' needs a value");
  EXPECT_NE(ErrorOf("template run {nope}\n").find("line 1: unknown placeholder"),
            std::string::npos);
  EXPECT_NE(ErrorOf("run-as root\n").find("is root"), std::string::npos);
  EXPECT_NE(ErrorOf("run-as 0:0\n").find("is root"), std::string::npos);
  EXPECT_NE(ErrorOf("run-as no-such-user-xyz\n").find("no such user"),
            std::string::npos);
  EXPECT_EQ(ErrorOf("run-as nobody\nrun-as nobody\n"),
            "policy: line 2: a second run-as");
}

TEST(CommandPolicyTest, AnEmptyPolicyRefusesEveryCommandNamingIt) {
  const absl::Status s = CheckCommandAllowed(CommandPolicy{}, "id > /tmp/x");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "command refused: this agent has no --command-policy file, so it "
            "runs no command: 'id > /tmp/x'");
}

TEST(CommandPolicyTest, ATemplateAllowsExactlyItself) {
  const CommandPolicy p = ParseOrDie("template /opt/train.sh {config} {dp}\n");
  EXPECT_TRUE(CheckCommandAllowed(p, "/opt/train.sh {config} {dp}").ok());
  EXPECT_TRUE(CheckCommandAllowed(p, "  /opt/train.sh {config} {dp}\n").ok());
  for (const char* other :
       {"/opt/train.sh {config} {dp}; id", "/opt/train.sh {config}",
        "/opt/train.sh  {config} {dp}", "/opt/train.sh {config} {dp} x"}) {
    const absl::Status s = CheckCommandAllowed(p, other);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << other;
    EXPECT_NE(s.message().find("not allowed by policy"), std::string::npos);
  }
}

TEST(CommandPolicyTest, AProgramAllowsPlainWordsAfterItOnly) {
  const CommandPolicy p = ParseOrDie("program /opt/run.sh\n");
  EXPECT_TRUE(
      CheckCommandAllowed(p, "/opt/run.sh --tp {tp} --out=a/b,c:1 {config}")
          .ok());
  for (const char* shell :
       {"/opt/run.sh; id", "/opt/run.sh $(id)", "/opt/run.sh `id`",
        "/opt/run.sh > /etc/x", "/opt/run.sh | sh", "/opt/run.sh 'a b'",
        "/opt/run.sh *", "/opt/run.sh && id", "/opt/run.sh {{x}}",
        "/opt/run.sh\nid"}) {
    const absl::Status s = CheckCommandAllowed(p, shell);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << shell;
    EXPECT_NE(s.message().find("no shell syntax"), std::string::npos)
        << s.message();
  }
  // Another program, or this one's name inside a longer path.
  EXPECT_FALSE(CheckCommandAllowed(p, "/opt/run.shx --tp 2").ok());
  EXPECT_FALSE(CheckCommandAllowed(p, "/usr/bin/id").ok());
}

TEST(CommandPolicyTest, APolicyFileOthersMayWriteIsRefused) {
  absl::StatusOr<std::string> dir =
      MakeUniqueDirectory(::testing::TempDir(), "policy-");
  ASSERT_TRUE(dir.ok());
  const std::string path = *dir + "/commands";
  ASSERT_TRUE(WriteFileAtomically(path, "program /opt/run.sh\n").ok());
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  absl::StatusOr<CommandPolicy> ok = ReadCommandPolicyFile(path);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->source, path);
  ASSERT_EQ(::chmod(path.c_str(), 0664), 0);
  absl::StatusOr<CommandPolicy> writable = ReadCommandPolicyFile(path);
  EXPECT_EQ(writable.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(writable.status().message().find("chmod go-w"), std::string::npos);
  EXPECT_FALSE(ReadCommandPolicyFile(*dir + "/missing").ok());
  (void)RemoveTree(*dir);
}

}  // namespace
}  // namespace tessera::agents
