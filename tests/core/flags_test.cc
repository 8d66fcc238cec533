#include "core/flags.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

struct Values {
  std::optional<std::string> model;
  std::optional<int64_t> nodes;
  std::optional<double> tokens;
  bool json = false;
  std::optional<bool> tie;
  std::vector<std::string> inputs;
};

// Parses `args` into fresh values; returns the error message ("" if none).
std::string ParseInto(const std::vector<std::string>& args, Values* v) {
  FlagSet flags("tessera test");
  flags.AddSection("Workload");
  flags.AddString("model", "NAME", "model preset", &v->model);
  flags.AddInt("nodes", "N", "nodes", &v->nodes);
  flags.AddDouble("total-tokens", "N", "token budget", &v->tokens);
  flags.AddStrings("input", "FILE", "an input file", &v->inputs);
  flags.AddSection("Output");
  flags.AddSwitch("json", "JSON output", &v->json);
  flags.AddSwitch("tie-embeddings", "tied", &v->tie);
  const absl::Status s = flags.Parse(args);
  if (!s.ok()) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  }
  return std::string(s.message());
}

std::string ErrorOf(const std::vector<std::string>& args) {
  Values v;
  return ParseInto(args, &v);
}

TEST(FlagsTest, RepeatableFlagsCollectEveryValue) {
  Values v;
  ASSERT_EQ(ParseInto({"--input", "a.jsonl", "--input=b.jsonl"}, &v), "");
  EXPECT_EQ(v.inputs, (std::vector<std::string>{"a.jsonl", "b.jsonl"}));
}

TEST(FlagsTest, BothValueFormsAndSwitches) {
  Values v;
  ASSERT_EQ(ParseInto({"--model", "llama2-7b", "--nodes=32", "--total-tokens",
                       "1e12", "--json", "--tie-embeddings=false"},
                      &v),
            "");
  EXPECT_EQ(v.model, "llama2-7b");
  EXPECT_EQ(v.nodes, 32);
  EXPECT_EQ(v.tokens, 1e12);
  EXPECT_TRUE(v.json);
  EXPECT_EQ(v.tie, false);
  Values none;
  ASSERT_EQ(ParseInto({}, &none), "");
  EXPECT_FALSE(none.model.has_value());
  EXPECT_FALSE(none.nodes.has_value());
  EXPECT_FALSE(none.json);
  EXPECT_FALSE(none.tie.has_value());
  // A negative number is a value, not a flag; its range is checked later.
  Values negative;
  ASSERT_EQ(ParseInto({"--nodes", "-1", "--model=a=b"}, &negative), "");
  EXPECT_EQ(negative.nodes, -1);
  EXPECT_EQ(negative.model, "a=b");
}

TEST(FlagsTest, ErrorsNameTheFlag) {
  EXPECT_EQ(ErrorOf({"--nodez", "3"}),
            "--nodez: unknown flag (did you mean --nodes?)");
  EXPECT_EQ(ErrorOf({"--frobnicate"}),
            "--frobnicate: unknown flag (see tessera test --help)");
  EXPECT_EQ(ErrorOf({"--nodes"}), "--nodes: missing value (--nodes N)");
  EXPECT_EQ(ErrorOf({"--model", "--json"}),
            "--model: missing value (--model NAME)");
  EXPECT_EQ(ErrorOf({"--model="}), "--model: empty value (--model NAME)");
  EXPECT_EQ(ErrorOf({"--nodes", "abc"}), "--nodes: 'abc' is not an integer");
  EXPECT_EQ(ErrorOf({"--nodes", "3.5"}), "--nodes: '3.5' is not an integer");
  EXPECT_EQ(ErrorOf({"--nodes", "99999999999999999999"}),
            "--nodes: '99999999999999999999' is out of range");
  EXPECT_EQ(ErrorOf({"--total-tokens", "lots"}),
            "--total-tokens: 'lots' is not a finite number");
  EXPECT_EQ(ErrorOf({"--total-tokens", "inf"}),
            "--total-tokens: 'inf' is not a finite number");
  EXPECT_EQ(ErrorOf({"--json=maybe"}), "--json: 'maybe' is not true or false");
  EXPECT_EQ(ErrorOf({"--nodes", "1", "--nodes=2"}), "--nodes: given twice");
  EXPECT_EQ(ErrorOf({"--input", ""}), "--input: empty value (--input FILE)");
  EXPECT_EQ(ErrorOf({"llama"}),
            "unexpected argument 'llama' (flags are --name value; see "
            "tessera test --help)");
  EXPECT_EQ(ErrorOf({"-n", "3"}),
            "-n: unknown flag (flags are --name; see tessera test --help)");
  EXPECT_EQ(ErrorOf({"--"}),
            "unexpected argument '--' (flags are --name value; see tessera "
            "test --help)");
}

TEST(FlagsTest, HelpListsEveryFlagBySection) {
  Values v;
  FlagSet flags("tessera test");
  flags.AddSection("Workload");
  flags.AddString("model", "NAME", "model preset", &v.model);
  flags.AddSection("Output");
  flags.AddSwitch("json", "JSON output", &v.json);
  const std::string help = flags.Help();
  EXPECT_NE(help.find("Workload:\n  --model NAME"), std::string::npos) << help;
  EXPECT_NE(help.find("model preset"), std::string::npos);
  EXPECT_NE(help.find("Output:\n  --json"), std::string::npos) << help;
  EXPECT_TRUE(FlagSet::WantsHelp({"--nodes", "3", "--help"}));
  EXPECT_TRUE(FlagSet::WantsHelp({"-h"}));
  EXPECT_FALSE(FlagSet::WantsHelp({"--nodes", "3"}));
}

}  // namespace
}  // namespace tessera
