#include "core/flags.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

// ParseSize's value, or its error message.
std::string Size(absl::string_view text, SizeUnit unit = SizeUnit::kCount) {
  absl::StatusOr<int64_t> n = ParseSize(text, unit);
  return n.ok() ? std::to_string(*n) : std::string(n.status().message());
}

TEST(FlagsTest, SizesTakeDecimalAndBinarySuffixesExactly) {
  EXPECT_EQ(Size("4096"), "4096");
  EXPECT_EQ(Size("8k"), "8000");
  EXPECT_EQ(Size("1.5k"), "1500");
  EXPECT_EQ(Size("1.50k"), "1500");
  EXPECT_EQ(Size("1.5T"), "1500000000000");
  EXPECT_EQ(Size("2P"), "2000000000000000");
  EXPECT_EQ(Size("64Ki"), "65536");
  EXPECT_EQ(Size("0.5Ki"), "512");
  EXPECT_EQ(Size("1e12"), "1000000000000");
  EXPECT_EQ(Size("2.5e3"), "2500");
  EXPECT_EQ(Size("-4"), "-4");  // ranges are the caller's
  EXPECT_EQ(Size("0"), "0");
  EXPECT_EQ(Size("80GiB", SizeUnit::kBytes), "85899345920");
  EXPECT_EQ(Size("80Gi", SizeUnit::kBytes), "85899345920");
  EXPECT_EQ(Size("1.5MiB", SizeUnit::kBytes), "1572864");
  EXPECT_EQ(Size("512B", SizeUnit::kBytes), "512");
  EXPECT_EQ(Size("8e9", SizeUnit::kBytes), "8000000000");
  // The largest int64 and one more.
  EXPECT_EQ(Size("9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(Size("9223372036854775808"),
            "'9223372036854775808' is out of range");
  EXPECT_EQ(Size("10000P"), "'10000P' is out of range");
  EXPECT_EQ(Size("1e30"), "'1e30' is out of range");
}

TEST(FlagsTest, MalformedAmbiguousAndFractionalSizesAreRefused) {
  const std::string counts =
      " is not a number with an optional suffix (k, M, "
      "G, T, P; Ki, Mi, Gi, Ti)";
  EXPECT_EQ(Size("8q"), "'8q'" + counts);
  EXPECT_EQ(Size("k"), "'k'" + counts);
  EXPECT_EQ(Size("8kk"), "'8kk'" + counts);
  EXPECT_EQ(Size("8 k"), "'8 k'" + counts);
  EXPECT_EQ(Size("1e"), "'1e'" + counts);
  EXPECT_EQ(Size("8KiB"), "'8KiB'" + counts);  // a count is not bytes
  EXPECT_EQ(Size("1.2.3"), "'1.2.3'" + counts);
  EXPECT_EQ(Size("1.0001k"), "'1.0001k' is not an integer");
  EXPECT_EQ(Size("0.5"), "'0.5' is not an integer");
  EXPECT_EQ(Size("1e-4k"), "'1e-4k' is not an integer");
  EXPECT_EQ(Size("80G", SizeUnit::kBytes),
            "'80G' is ambiguous for bytes: write 80Gi (x 1024^3) or the bytes "
            "in full (80 x 1000^3)");
  EXPECT_EQ(Size("16GB", SizeUnit::kBytes),
            "'16GB' is ambiguous for bytes: write 16GiB (x 1024^3) or the "
            "bytes in full (16 x 1000^3)");
  EXPECT_EQ(Size("1.1B", SizeUnit::kBytes), "'1.1B' is not an integer");
  EXPECT_EQ(Size("8q", SizeUnit::kBytes),
            "'8q' is not a number of bytes with an optional suffix (Ki, Mi, "
            "Gi, Ti or KiB, MiB, GiB, TiB)");
}

TEST(FlagsTest, SizeFlagsNameTheFlagAndListTheirSuffixes) {
  std::optional<int64_t> seq_len, memory;
  FlagSet flags("tessera test");
  flags.AddSize("seq-len", "N", "tokens per sequence", SizeUnit::kCount,
                &seq_len);
  flags.AddSize("memory", "BYTES", "memory per GPU", SizeUnit::kBytes, &memory);
  ASSERT_TRUE(flags.Parse({"--seq-len", "8Ki", "--memory=80GiB"}).ok());
  EXPECT_EQ(seq_len, 8192);
  EXPECT_EQ(memory, int64_t{80} << 30);
  FlagSet again("tessera test");
  again.AddSize("seq-len", "N", "tokens per sequence", SizeUnit::kCount,
                &seq_len);
  EXPECT_EQ(again.Parse({"--seq-len", "8q"}).message(),
            "--seq-len: '8q' is not a number with an optional suffix (k, M, "
            "G, T, P; Ki, Mi, Gi, Ti)");
  EXPECT_NE(flags.Help().find("(suffixes: Ki, Mi, Gi, Ti or KiB"),
            std::string::npos)
      << flags.Help();
}

TEST(FlagsTest, EveryProblemIsReportedOneLineEach) {
  std::optional<std::string> model;
  std::optional<int64_t> nodes, seq_len;
  FlagSet flags("tessera test");
  flags.AddString("model", "NAME", "model preset", &model);
  flags.AddInt("nodes", "N", "nodes", &nodes);
  flags.AddSize("seq-len", "N", "tokens", SizeUnit::kCount, &seq_len);
  flags.AddRequirement([](const auto& given) {
    std::vector<std::string> missing;
    for (const char* name : {"model", "nodes", "seq-len"}) {
      if (!given(name)) {
        missing.push_back(absl::StrCat(name, ": required (--", name, ")"));
      }
    }
    return missing;
  });
  const absl::Status s = flags.Parse({"--nodes", "x", "--seq-len", "1.0001k",
                                      "--nodez", "3", "stray", "--nodes", "4"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  // The bad --nodes and --seq-len were given: only --model is missing.
  EXPECT_EQ(s.message(),
            "--nodes: 'x' is not an integer\n"
            "--seq-len: '1.0001k' is not an integer\n"
            "--nodez: unknown flag (did you mean --nodes?)\n"
            "unexpected argument 'stray' (flags are --name value; see tessera "
            "test --help)\n"
            "--nodes: given twice\n"
            "model: required (--model)");
  // All met: no error.
  EXPECT_TRUE(
      flags.Parse({"--model", "m", "--nodes", "2", "--seq-len", "4k"}).ok());
}

TEST(FlagsTest, ShortNames) {
  std::optional<std::string> output;
  FlagSet flags("tessera test");
  flags.AddString("output", "FORMAT", "table, json, csv or wide", &output);
  flags.AddShortName('o', "output");
  ASSERT_TRUE(flags.Parse({"-o", "csv"}).ok());
  EXPECT_EQ(output, "csv");
  ASSERT_TRUE(flags.Parse({"-o=json"}).ok());
  EXPECT_EQ(output, "json");
  ASSERT_TRUE(flags.Parse({"--output", "wide"}).ok());
  EXPECT_EQ(output, "wide");
  EXPECT_EQ(flags.Parse({"-o"}).message(), "-o: missing value (-o FORMAT)");
  EXPECT_EQ(flags.Parse({"-o", "a", "--output", "b"}).message(),
            "--output: given twice");
  EXPECT_EQ(flags.Parse({"-x"}).message(),
            "-x: unknown flag (flags are --name; see tessera test --help)");
  EXPECT_EQ(flags.Parse({"-ojson"}).message(),
            "-ojson: unknown flag (flags are --name; see tessera test "
            "--help)");
  EXPECT_NE(flags.Help().find("  -o, --output FORMAT"), std::string::npos)
      << flags.Help();
  EXPECT_TRUE(FlagSet::WantsVersion({"--version"}));
  EXPECT_FALSE(FlagSet::WantsVersion({"--help"}));
}

}  // namespace
}  // namespace tessera
