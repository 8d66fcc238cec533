#include "core/command_template.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(CommandTemplateTest, ListsPlaceholdersInOrderOfFirstUse) {
  absl::StatusOr<std::vector<std::string>> used = CommandTemplatePlaceholders(
      "torchrun --nnodes {nodes} --tp {tp} --nodes-again {nodes} {{literal}}");
  ASSERT_TRUE(used.ok()) << used.status();
  EXPECT_EQ(*used, (std::vector<std::string>{"nodes", "tp"}));
}

TEST(CommandTemplateTest, UnknownPlaceholderIsNamedWithItsOffset) {
  const absl::Status s = CheckCommandTemplate("run --x {tp} --y {tensor}");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown placeholder {tensor} at offset 17"),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("{micro_batch}"), std::string::npos) << s;
}

TEST(CommandTemplateTest, BracesMustBalance) {
  EXPECT_NE(CheckCommandTemplate("run {tp").message().find(
                "unclosed '{' at offset 4"),
            std::string::npos);
  EXPECT_NE(
      CheckCommandTemplate("run tp}").message().find("stray '}' at offset 6"),
      std::string::npos);
  EXPECT_FALSE(CheckCommandTemplate("   ").ok());
  EXPECT_FALSE(CheckCommandTemplate("run {}").ok());
  EXPECT_TRUE(CheckCommandTemplate("awk '{{print $1}}'").ok());
}

TEST(CommandTemplateTest, EveryPlaceholderIsKnownOnce) {
  std::map<std::string, int> seen;
  for (const CommandPlaceholder& p : CommandPlaceholders()) {
    EXPECT_EQ(++seen[p.name], 1) << p.name;
    EXPECT_TRUE(CheckCommandTemplate(std::string("x {") + p.name + "}").ok())
        << p.name;
  }
  EXPECT_GE(seen.size(), 30u);
}

TEST(CommandTemplateTest, ExpandsWithShellQuotedValues) {
  absl::StatusOr<std::string> line = ExpandCommandTemplate(
      "train --tp {tp} --dir {trial_dir} --rc {recompute} '{{x}}'",
      {{"tp", "2"}, {"trial_dir", "/tmp/a b"}, {"recompute", "it's"}});
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(*line, "train --tp 2 --dir '/tmp/a b' --rc 'it'\\''s' '{x}'");
  const absl::StatusOr<std::string> missing =
      ExpandCommandTemplate("train --tp {tp} --pp {pp}", {{"tp", "2"}});
  EXPECT_EQ(missing.status().message(), "no value for {pp}");
}

TEST(CommandTemplateTest, ShellQuoteLeavesPlainWordsAlone) {
  EXPECT_EQ(ShellQuote("127.0.0.1:29500"), "127.0.0.1:29500");
  EXPECT_EQ(ShellQuote("a-b_c=d,e+f@g%h/i"), "a-b_c=d,e+f@g%h/i");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("$HOME"), "'$HOME'");
  EXPECT_EQ(ShellQuote("a;rm -rf /"), "'a;rm -rf /'");
}

}  // namespace
}  // namespace tessera
