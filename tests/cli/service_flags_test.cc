// The service commands' input: operands among flags, study ids, times
// (RFC 3339, dates, spans back from now) and the trial filters, checked
// against hand-computed instants and requests.
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cli/operands.h"
#include "cli/time_text.h"
#include "cli/trial_filters.h"
#include "core/flags.h"
#include "gtest/gtest.h"

namespace tessera::cli {
namespace {

using Args = std::vector<std::string>;

// 2024-05-01T12:00:00Z: 19844 days after the epoch, plus 12 hours.
constexpr int64_t kMay1Noon = (19844LL * 86400 + 12 * 3600) * 1000;

TEST(OperandsTest, SplitsOperandsFromFlagsAndTheirValues) {
  Operands o = SplitOperands(
      {"--wait", "study.json", "--planner", "h:1", "--timeout=3"}, {"wait"});
  EXPECT_EQ(o.operands, Args{"study.json"});
  EXPECT_EQ(o.flags, (Args{"--wait", "--planner", "h:1", "--timeout=3"}));
  // A flag that takes a value takes the next argument, as FlagSet does.
  o = SplitOperands({"--planner", "h:1", "7"}, {});
  EXPECT_EQ(o.operands, Args{"7"});
  // Without its value (next is a flag), nothing is swallowed.
  o = SplitOperands({"--planner", "--json", "7"}, {"json"});
  EXPECT_EQ(o.operands, Args{"7"});
  EXPECT_EQ(o.flags, (Args{"--planner", "--json"}));
  // "--" ends the flags; "-x" stays a flag (FlagSet names it).
  o = SplitOperands({"-x", "--", "--odd-name.json"}, {});
  EXPECT_EQ(o.operands, Args{"--odd-name.json"});
  EXPECT_EQ(o.flags, Args{"-x"});
  o = SplitOperands({"-", "--help"}, {});
  EXPECT_EQ(o.operands, Args{"-"});
}

TEST(OperandsTest, ExpectsTheRightCount) {
  Operands none;
  absl::Status s = ExpectOperands(none, {"ID"}, "tessera watch ID");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "missing ID (usage: tessera watch ID)");
  Operands two;
  two.operands = {"7", "8"};
  s = ExpectOperands(two, {"ID"}, "tessera watch ID");
  EXPECT_EQ(s.message(), "unexpected argument '8' (usage: tessera watch ID)");
  Operands one;
  one.operands = {"7"};
  EXPECT_TRUE(ExpectOperands(one, {"ID"}, "u").ok());
}

TEST(OperandsTest, StudyIds) {
  EXPECT_EQ(*ParseStudyId("42"), 42);
  EXPECT_EQ(*ParseStudyId("9223372036854775807"), INT64_MAX);
  for (const char* bad :
       {"0", "-1", "x", "4x", "", " 4", "+4", "9223372036854775808"}) {
    absl::StatusOr<int64_t> id = ParseStudyId(bad);
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_EQ(id.status().message(),
              absl::StrCat("study: '", bad,
                           "' is not a study id (a positive integer)"));
  }
}

TEST(TimeTextTest, Rfc3339DatesAndSpans) {
  const absl::Time now = absl::FromUnixMillis(kMay1Noon);
  EXPECT_EQ(ToUnixMs(*ParseTimeBound("2024-05-01T12:00:00Z", now)), kMay1Noon);
  EXPECT_EQ(ToUnixMs(*ParseTimeBound("2024-05-01T14:00:00.5+02:00", now)),
            kMay1Noon + 500);
  EXPECT_EQ(ToUnixMs(*ParseTimeBound("2024-05-01", now)),
            kMay1Noon - 12 * 3600 * 1000);
  EXPECT_EQ(ToUnixMs(*ParseTimeBound("90s", now)), kMay1Noon - 90'000);
  EXPECT_EQ(ToUnixMs(*ParseTimeBound("30m", now)), kMay1Noon - 1'800'000);
  EXPECT_EQ(ToUnixMs(*ParseTimeBound("2h", now)), kMay1Noon - 7'200'000);
  EXPECT_EQ(ToUnixMs(*ParseTimeBound("1.5d", now)),
            kMay1Noon - 36LL * 3600 * 1000);
  EXPECT_EQ(ToUnixMs(*ParseTimeBound("7d", now)),
            kMay1Noon - 7LL * 86400 * 1000);
  EXPECT_EQ(ToUnixMs(*ParseTimeBound("2w", now)),
            kMay1Noon - 14LL * 86400 * 1000);
  EXPECT_EQ(ToUnixMs(*ParseTimeBound("0h", now)), kMay1Noon);
  for (const char* bad : {"", "h", "2", "2y", "-2h", "2 h", "1e3h", "yesterday",
                          "2024-13-01", "2024-05-01T12:00:00"}) {
    absl::StatusOr<absl::Time> t = ParseTimeBound(bad, now);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find("is not a time"), std::string::npos)
        << t.status();
  }
  absl::StatusOr<absl::Time> ancient = ParseTimeBound("100000w", now);
  ASSERT_FALSE(ancient.ok());
  EXPECT_NE(ancient.status().message().find("before 1970"), std::string::npos);
}

TEST(TimeTextTest, FormatsUtc) {
  EXPECT_EQ(FormatUnixMs(kMay1Noon), "2024-05-01T12:00:00Z");
  EXPECT_EQ(FormatUnixMs(kMay1Noon + 999), "2024-05-01T12:00:00Z");
  EXPECT_EQ(FormatUnixMs(0), "");
}

// Parses `args` into filters and applies them at kMay1Noon.
absl::StatusOr<v1::ListTrialsRequest> Filter(const Args& args) {
  FlagSet flags("test");
  TrialFilterFlags filters;
  filters.Register(&flags);
  if (absl::Status s = flags.Parse(args); !s.ok()) return s;
  v1::ListTrialsRequest request;
  if (absl::Status s = filters.Apply(absl::FromUnixMillis(kMay1Noon), &request);
      !s.ok()) {
    return s;
  }
  return request;
}

TEST(TrialFiltersTest, FillTheRequest) {
  absl::StatusOr<v1::ListTrialsRequest> r = Filter(
      {"--state",  "ok,failed",   "--model",   "llama2-7b", "--gpu",
       "h100-sxm", "--tp",        "8",         "--pp",      "2",
       "--cp",     "1",           "--zero",    "0",         "--micro-batch",
       "2",        "--recompute", "selective", "--sp",      "--since",
       "30d",      "--until",     "2024-05-01"});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->states_size(), 6);
  EXPECT_EQ(r->states(0), v1::TRIAL_OK);
  EXPECT_EQ(r->states(1), v1::TRIAL_OOM);
  EXPECT_EQ(r->model(), "llama2-7b");
  EXPECT_EQ(r->gpu(), "h100-sxm");
  EXPECT_EQ(r->tp(), 8);
  EXPECT_EQ(r->pp(), 2);
  EXPECT_TRUE(r->has_cp());
  EXPECT_TRUE(r->has_zero());  // zero 0 is a filter, not "any"
  EXPECT_EQ(r->zero(), 0);
  EXPECT_FALSE(r->has_vpp());
  EXPECT_FALSE(r->has_dp());
  EXPECT_EQ(r->micro_batch(), 2);
  EXPECT_EQ(r->recompute(), "selective");
  EXPECT_TRUE(r->sp());
  EXPECT_EQ(r->since_unix_ms(), kMay1Noon - 30LL * 86400 * 1000);
  EXPECT_EQ(r->until_unix_ms(), kMay1Noon - 12 * 3600 * 1000);

  r = Filter({});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ByteSizeLong(), 0u);  // nothing set: every trial
  r = Filter({"--sp=false"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->has_sp());
  EXPECT_FALSE(r->sp());
}

TEST(TrialFiltersTest, BadValuesNameTheFlag) {
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"--tp", "0"}, "--tp: must be at least 1, got 0"},
      {{"--micro-batch", "-2"}, "--micro-batch: must be at least 1, got -2"},
      {{"--zero", "4"}, "--zero: must be 0 to 3, got 4"},
      {{"--state", "okk"}, "--state: unknown trial state 'okk'"},
      {{"--recompute", "some"}, "--recompute: "},
      {{"--since", "3x"}, "--since: '3x' is not a time"},
      {{"--since", "1d", "--until", "2d"},
       "--until: '2d' is not after --since '1d'"},
  };
  for (const auto& [args, expected] : cases) {
    absl::StatusOr<v1::ListTrialsRequest> r = Filter(args);
    ASSERT_FALSE(r.ok()) << args[0];
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(expected, 0), 0u) << r.status();
  }
}

}  // namespace
}  // namespace tessera::cli
