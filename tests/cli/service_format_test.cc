// The service commands' text forms, checked on constructed messages against
// hand-written expectations: tables (alignment in characters, "—" for what
// was not measured), CSV quoting (read back by an independent parser),
// JSON field names and nulls, state names, compact layouts, the progress
// line and the recommendation's labels.
#include <sstream>
#include <string>
#include <vector>

#include "cli/recommendation_output.h"
#include "cli/service_json.h"
#include "cli/service_names.h"
#include "cli/study_progress.h"
#include "cli/text_table.h"
#include "cli/trial_history.h"
#include "cli/trial_table.h"
#include "core/layout.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::cli {
namespace {

using nlohmann::json;

// RFC 4180 fields of one CSV text, parsed independently of CsvLine: quoted
// fields with doubled quotes, records ending in "\n".
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> records(1);
  std::string field;
  bool quoted = false;
  bool was_quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      EXPECT_TRUE(field.empty()) << "a quote inside an unquoted field";
      quoted = was_quoted = true;
    } else if (c == ',') {
      records.back().push_back(field);
      field.clear();
      was_quoted = false;
    } else if (c == '\n') {
      records.back().push_back(field);
      field.clear();
      was_quoted = false;
      records.emplace_back();
    } else {
      field += c;
    }
  }
  EXPECT_FALSE(quoted) << "unterminated quote";
  EXPECT_TRUE(field.empty() && !was_quoted) << "no final line break";
  records.pop_back();
  return records;
}

v1::Layout MakeLayout(int64_t tp, int64_t dp, int64_t zero, int64_t mb,
                      int64_t ga, const std::string& recompute = "") {
  v1::Layout l;
  l.set_tp(tp);
  l.set_pp(1);
  l.set_vpp(1);
  l.set_cp(1);
  l.set_dp(dp);
  l.set_zero(zero);
  l.set_shard_group(zero > 0 ? dp : 1);
  l.set_micro_batch(mb);
  l.set_grad_accum(ga);
  l.set_recompute(recompute);
  return l;
}

constexpr int64_t kFirst = 1714564800000;  // 2024-05-01T12:00:00Z

// An ok trial with power measured, and a queued one.
v1::Trial OkTrial() {
  v1::Trial t;
  t.set_id(12);
  t.set_study_id(7);
  t.set_rung(1);
  t.set_state(v1::TRIAL_OK);
  *t.mutable_layout() = MakeLayout(2, 4, 3, 2, 8, "selective");
  t.set_steps(6);
  t.set_warmup_steps(2);
  t.set_gang_size(1);
  t.set_model("tiny");
  t.set_gpu("cpu");
  t.set_created_unix_ms(1714564800000);  // 2024-05-01T12:00:00Z
  t.set_finished_unix_ms(1714564861500);
  v1::TrialMetrics* m = t.mutable_measured();
  m->set_steps(6);
  m->set_tokens_per_s(51234.4);
  m->set_mfu(0.4123);
  m->set_peak_memory_bytes(int64_t{3} << 30);  // 3 GiB
  m->set_exposed_comm_s(0.0125);
  m->set_watts_per_gpu(612.4);
  m->set_tokens_per_joule(0.25);
  m->add_loss(10.5);
  m->add_loss(10.25);
  t.mutable_predicted()->set_tokens_per_s(49000.4);
  return t;
}

v1::Trial QueuedTrial() {
  v1::Trial t;
  t.set_id(13);
  t.set_study_id(7);
  t.set_state(v1::TRIAL_QUEUED);
  *t.mutable_layout() = MakeLayout(1, 8, 0, 1, 4);
  t.set_steps(3);
  t.mutable_predicted()->set_tokens_per_s(40000);
  return t;
}

TEST(TextTableTest, AlignsInCharactersAndTrimsTrailingSpaces) {
  TextTable table({{"id", kRight}, {"name", kLeft}, {"watts", kRight}});
  table.AddRow({"7", "naïve—x", "—"});
  table.AddRow({"123", "ab", "600 W"});
  std::ostringstream out;
  table.Print(out);
  // Widths: id 3, name 7 characters ("naïve—x" is 10 bytes), watts 5.
  EXPECT_EQ(out.str(),
            " id  name     watts\n"
            "  7  naïve—x      —\n"
            "123  ab       600 W\n");
}

TEST(TextTableTest, LastLeftColumnHasNoTrailingSpaces) {
  TextTable table({{"a", kLeft}, {"reason", kLeft}});
  table.AddRow({"x", ""});
  table.AddRow({"yyy", "long reason"});
  std::ostringstream out;
  table.Print(out);
  EXPECT_EQ(out.str(), "a    reason\nx\nyyy  long reason\n");
}

TEST(TextTableTest, TruncateCountsCharacters) {
  EXPECT_EQ(Truncate("short", 10), "short");
  EXPECT_EQ(Truncate("exactly10!", 10), "exactly10!");
  EXPECT_EQ(Truncate("eleven char", 10), "eleven ch…");
  EXPECT_EQ(DisplayWidth(Truncate("eleven char", 10)), 10u);
  // Multi-byte characters are never cut in half.
  EXPECT_EQ(Truncate("ééééé", 3), "éé…");
  EXPECT_EQ(Truncate("line\nbreak", 20), "line break");
  EXPECT_EQ(DisplayWidth("—é"), 2u);
}

TEST(CsvTest, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(CsvField("tp=2,dp=4"), "\"tp=2,dp=4\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField(""), "");
  EXPECT_EQ(CsvLine({"a", "b,c", ""}), "a,\"b,c\",\n");
}

TEST(CsvTest, NumbersReadBackExactly) {
  for (double v : {0.1, 51234.4, 1e12, 0.4123, 1.0 / 3.0, 612.0}) {
    EXPECT_EQ(std::stod(CsvNumber(v)), v) << CsvNumber(v);
  }
  EXPECT_EQ(CsvNumber(0.1), "0.1");
  EXPECT_EQ(CsvNumber(612.0), "612");
  EXPECT_EQ(CsvNumber(std::nullopt), "");
}

TEST(TextTableTest, ReadableNumbers) {
  EXPECT_EQ(Readable(0), "0");
  EXPECT_EQ(Readable(0.41), "0.41");
  EXPECT_EQ(Readable(12.34), "12.3");
  EXPECT_EQ(Readable(0.000123456), "0.000123");
  EXPECT_EQ(Readable(99.94), "99.9");
  EXPECT_EQ(Readable(12345.6), "12346");
  EXPECT_EQ(Readable(-250.4), "-250");
}

TEST(TextTableTest, ReadableBytes) {
  EXPECT_EQ(ReadableBytes(0), "0 B");
  EXPECT_EQ(ReadableBytes(512), "512 B");
  EXPECT_EQ(ReadableBytes(1536), "1.5 KiB");
  EXPECT_EQ(ReadableBytes(3.5 * 1024 * 1024), "3.5 MiB");
  EXPECT_EQ(ReadableBytes(78.125 * 1024 * 1024 * 1024), "78.1 GiB");
  EXPECT_EQ(ReadableBytes(2048.0 * 1024 * 1024 * 1024 * 1024), "2048 TiB");
}

TEST(ServiceNamesTest, StatesRoundTrip) {
  for (v1::StudyState s : {v1::STUDY_QUEUED, v1::STUDY_RUNNING, v1::STUDY_DONE,
                           v1::STUDY_CANCELLED, v1::STUDY_FAILED}) {
    absl::StatusOr<v1::StudyState> back = ParseStudyState(StudyStateName(s));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(*ParseStudyState("STUDY_DONE"), v1::STUDY_DONE);
  EXPECT_EQ(*ParseStudyState("Running"), v1::STUDY_RUNNING);
  EXPECT_FALSE(ParseStudyState("finished").ok());
  EXPECT_EQ(TrialStateName(v1::TRIAL_LEASED), "running");
  EXPECT_EQ(TrialStateName(v1::TRIAL_OOM), "oom");
  EXPECT_TRUE(IsFinal(v1::STUDY_FAILED));
  EXPECT_FALSE(IsFinal(v1::STUDY_RUNNING));
}

TEST(ServiceNamesTest, TrialStateLists) {
  absl::StatusOr<std::vector<v1::TrialState>> s =
      ParseTrialStates("ok, OOM,leased,ok");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, (std::vector<v1::TrialState>{v1::TRIAL_OK, v1::TRIAL_OOM,
                                             v1::TRIAL_LEASED}));
  s = ParseTrialStates("failed");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<v1::TrialState>{v1::TRIAL_OOM, v1::TRIAL_NAN,
                                             v1::TRIAL_TIMEOUT, v1::TRIAL_CRASH,
                                             v1::TRIAL_INVALID}));
  s = ParseTrialStates("done");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size(), 6u);
  EXPECT_EQ(*ParseTrialStates("trial_timeout"),
            std::vector<v1::TrialState>{v1::TRIAL_TIMEOUT});
  s = ParseTrialStates("ok,bogus");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("unknown trial state 'bogus'"),
            std::string::npos);
  EXPECT_FALSE(ParseTrialStates("").ok());
}

TEST(ServiceNamesTest, CompactLayoutKeepsWhatDiffersAndParsesBack) {
  const v1::Layout l = MakeLayout(2, 4, 3, 2, 8, "selective");
  EXPECT_EQ(CompactLayout(l),
            "tp=2,dp=4,zero=3,micro_batch=2,grad_accum=8,recompute=selective");
  v1::Layout hsdp = MakeLayout(1, 16, 3, 1, 2);
  hsdp.set_shard_group(8);
  hsdp.set_sp(false);
  hsdp.set_pp(2);
  hsdp.set_vpp(2);
  EXPECT_EQ(CompactLayout(hsdp),
            "pp=2,vpp=2,dp=16,zero=3,shard_group=8,micro_batch=1,grad_accum=2");
  // ParseLayout reads it back into the same fields.
  absl::StatusOr<Layout> back = ParseLayout(CompactLayout(l));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->tp, 2);
  EXPECT_EQ(back->dp, 4);
  EXPECT_EQ(back->zero, 3);
  EXPECT_EQ(back->micro_batch, 2);
  EXPECT_EQ(back->grad_accum, 8);
  EXPECT_EQ(back->recompute, Recompute::kSelective);
  // An unset layout (the proto's zeros) is the defaults.
  EXPECT_EQ(CompactLayout(v1::Layout()), "dp=0,micro_batch=1");
  EXPECT_EQ(FullLayout(l),
            "tp=2,sp=0,pp=1,vpp=1,cp=1,dp=4,zero=3,shard_group=4,"
            "micro_batch=2,grad_accum=8,recompute=selective");
}

// A command trial's framework reports no MFU and no communication: "—",
// not a measured 0.
TEST(TrialTableTest, ACommandTrialShowsWhatItDidNotMeasureAsNotMeasured) {
  google::protobuf::RepeatedPtrField<v1::Trial> trials;
  v1::Trial t = OkTrial();
  t.mutable_measured()->set_backend("command");
  t.mutable_measured()->set_mfu(0);
  t.mutable_measured()->set_exposed_comm_s(0);
  t.mutable_measured()->clear_watts_per_gpu();
  *trials.Add() = t;
  std::ostringstream out;
  PrintTrialTable(trials, out);
  std::istringstream lines(out.str());
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  size_t dashes = 0;
  for (size_t p = row.find("—"); p != std::string::npos;
       p = row.find("—", p + 1)) {
    ++dashes;
  }
  EXPECT_EQ(dashes, 3u) << row;  // MFU, exposed comm, watts
  EXPECT_NE(row.find(" 51234 "), std::string::npos) << row;
  EXPECT_EQ(row.find("0.0%"), std::string::npos) << row;
}

// Memory has one unit per table: the largest value's.
TEST(TrialTableTest, MemoryHasOneUnitForTheColumn) {
  EXPECT_EQ(ReadableBytesIn(512 * 1024, 3.0 * (1 << 30)), "0.000488 GiB");
  EXPECT_EQ(ReadableBytesIn(0, 0), "0 B");
  google::protobuf::RepeatedPtrField<v1::Trial> trials;
  v1::Trial small = OkTrial();
  small.mutable_measured()->set_peak_memory_bytes(int64_t{512} << 20);
  v1::Trial large = OkTrial();
  large.set_id(13);
  large.mutable_measured()->set_peak_memory_bytes(int64_t{3} << 30);
  *trials.Add() = small;
  *trials.Add() = large;
  std::ostringstream out;
  PrintTrialTable(trials, out);
  EXPECT_NE(out.str().find(" 0.5 GiB "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(" 3 GiB "), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("MiB"), std::string::npos) << out.str();
}

TEST(TrialTableTest, ColumnsAndPlaceholders) {
  google::protobuf::RepeatedPtrField<v1::Trial> trials;
  *trials.Add() = OkTrial();
  *trials.Add() = QueuedTrial();
  v1::Trial crashed = QueuedTrial();
  crashed.set_id(14);
  crashed.set_state(v1::TRIAL_CRASH);
  crashed.set_reason(
      "rank 3 exited with signal 11 (SIGSEGV) after step 2; stderr: "
      "segmentation fault in attention");
  *trials.Add() = crashed;
  std::ostringstream out;
  PrintTrialTable(trials, out);
  const std::string text = out.str();
  std::istringstream lines(text);
  std::string header, ok, queued, crash;
  std::getline(lines, header);
  std::getline(lines, ok);
  std::getline(lines, queued);
  std::getline(lines, crash);
  for (const char* column :
       {"id", "study", "rung", "state", "layout", "steps", "tokens/s", "MFU",
        "memory", "exposed comm", "watts", "predicted tokens/s", "reason"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column;
  }
  // 51234.4 tokens/s, 0.4123 MFU, 3 GiB peak, 612.4 W, as rounded by hand.
  EXPECT_NE(ok.find(" 51234 "), std::string::npos) << ok;
  EXPECT_NE(ok.find(" 41.2% "), std::string::npos) << ok;
  EXPECT_NE(ok.find(" 3 GiB "), std::string::npos) << ok;
  EXPECT_NE(ok.find(" 612 W "), std::string::npos) << ok;
  EXPECT_NE(ok.find(" 49000"), std::string::npos) << ok;
  EXPECT_NE(ok.find("tp=2,dp=4,zero=3,micro_batch=2,grad_accum=8"),
            std::string::npos);
  // A queued trial measured nothing: "—" for every measured column, the
  // prediction still there.
  size_t dashes = 0;
  for (size_t p = queued.find("—"); p != std::string::npos;
       p = queued.find("—", p + 1)) {
    ++dashes;
  }
  EXPECT_EQ(dashes, 5u) << queued;  // tokens/s, MFU, memory, exposed, watts
  EXPECT_NE(queued.find(" 40000"), std::string::npos) << queued;
  EXPECT_NE(queued.find(" queued "), std::string::npos) << queued;
  // Every column in full (-o wide): the whole reason.
  EXPECT_NE(crash.find(crashed.reason()), std::string::npos) << crash;
  // Columns line up: every row is as wide as the header where the last
  // column starts.
  const size_t reason_at = header.find("reason");
  EXPECT_EQ(DisplayWidth(crash.substr(0, crash.find("rank 3 exited"))),
            reason_at);
  // Fitting 100 columns (-o table): the reason is cut, the layout whole.
  std::ostringstream fitted;
  PrintTrialTable(trials, fitted, kTableWidth);
  std::istringstream fitted_lines(fitted.str());
  for (std::string line; std::getline(fitted_lines, line);) {
    EXPECT_LE(DisplayWidth(line), kTableWidth) << line;
  }
  EXPECT_NE(fitted.str().find("rank 3 exi"), std::string::npos) << fitted.str();
  EXPECT_EQ(fitted.str().find("attention"), std::string::npos) << fitted.str();
  // Wrapped at commas if need be, never cut: every part is there whole.
  for (const char* part :
       {"tp=2,", "dp=4,", "zero=3,", "micro_batch=2,", "grad_accum=8"}) {
    EXPECT_NE(fitted.str().find(part), std::string::npos) << part << "\n"
                                                          << fitted.str();
  }
}

TEST(TrialTableTest, CsvKeepsRawNumbersAndTheWholeReason) {
  google::protobuf::RepeatedPtrField<v1::Trial> trials;
  *trials.Add() = OkTrial();
  v1::Trial odd = QueuedTrial();
  odd.set_state(v1::TRIAL_CRASH);
  odd.set_reason("stderr: \"bad\", then\nmore");
  *trials.Add() = odd;
  std::ostringstream out;
  PrintTrialCsv(trials, out);
  const auto records = ParseCsv(out.str());
  ASSERT_EQ(records.size(), 3u);
  const std::vector<std::string>& h = records[0];
  ASSERT_EQ(h.size(), 16u);
  EXPECT_EQ(h[0], "id");
  EXPECT_EQ(h[6], "tokens_per_s");
  EXPECT_EQ(h[10], "watts_per_gpu");
  EXPECT_EQ(h[12], "reason");
  const std::vector<std::string>& ok = records[1];
  ASSERT_EQ(ok.size(), h.size());
  EXPECT_EQ(ok[0], "12");
  EXPECT_EQ(ok[1], "7");
  EXPECT_EQ(ok[3], "ok");
  EXPECT_EQ(ok[4],
            "tp=2,dp=4,zero=3,micro_batch=2,grad_accum=8,recompute=selective");
  EXPECT_EQ(std::stod(ok[6]), 51234.4);
  EXPECT_EQ(std::stod(ok[7]), 0.4123);
  EXPECT_EQ(ok[8], std::to_string(int64_t{3} << 30));
  EXPECT_EQ(std::stod(ok[10]), 612.4);
  EXPECT_EQ(ok[15], "2024-05-01T12:00:00Z");
  const std::vector<std::string>& crash = records[2];
  ASSERT_EQ(crash.size(), h.size());
  EXPECT_EQ(crash[6], "");  // not measured: empty, not "—"
  EXPECT_EQ(crash[10], "");
  EXPECT_EQ(crash[12], "stderr: \"bad\", then\nmore");
}

TEST(ServiceJsonTest, TrialFieldsNumbersAndNulls) {
  const json ok = TrialJson(OkTrial());
  for (const char* key : {"id",
                          "study_id",
                          "rung",
                          "state",
                          "reason",
                          "layout",
                          "warmup_steps",
                          "steps",
                          "gang_size",
                          "attempts",
                          "agents",
                          "model",
                          "gpu",
                          "created",
                          "started",
                          "finished",
                          "created_unix_ms",
                          "started_unix_ms",
                          "finished_unix_ms",
                          "measured",
                          "predicted",
                          "ran"}) {
    EXPECT_TRUE(ok.contains(key)) << key;
  }
  EXPECT_EQ(ok.size(), 22u);
  EXPECT_TRUE(ok["ran"].is_null());  // the planner gave none
  EXPECT_TRUE(ok["id"].is_number_integer());  // not proto3 JSON's "12"
  EXPECT_EQ(ok["id"], 12);
  EXPECT_EQ(ok["state"], "ok");
  EXPECT_EQ(ok["created"], "2024-05-01T12:00:00Z");
  EXPECT_EQ(ok["finished"], "2024-05-01T12:01:01Z");
  EXPECT_TRUE(ok["started"].is_null());
  EXPECT_EQ(ok["layout"]["tp"], 2);
  EXPECT_EQ(ok["layout"]["sp"], false);
  EXPECT_EQ(ok["layout"]["recompute"], "selective");
  EXPECT_EQ(ok["layout"].size(), 11u);
  const json& m = ok["measured"];
  EXPECT_EQ(m["tokens_per_s"], 51234.4);
  EXPECT_EQ(m["peak_memory_bytes"], int64_t{3} << 30);
  EXPECT_EQ(m["watts_per_gpu"], 612.4);
  EXPECT_EQ(m["loss"], json::array({10.5, 10.25}));
  EXPECT_EQ(ok["predicted"]["tokens_per_s"], 49000.4);
  EXPECT_TRUE(ok["predicted"].contains("memory_breakdown"));

  v1::Trial no_power = OkTrial();
  no_power.mutable_measured()->clear_watts_per_gpu();
  no_power.mutable_measured()->clear_tokens_per_joule();
  const json np = TrialJson(no_power);
  EXPECT_TRUE(np["measured"]["watts_per_gpu"].is_null());
  EXPECT_TRUE(np["measured"]["tokens_per_joule"].is_null());
  const json queued = TrialJson(QueuedTrial());
  EXPECT_TRUE(queued["measured"].is_null());
  EXPECT_EQ(queued["state"], "queued");
  EXPECT_EQ(queued["layout"]["recompute"], "none");
}

TEST(ServiceJsonTest, StudyAndRecommendation) {
  v1::StudySummary s;
  s.set_id(7);
  s.set_name("tiny on cpu");
  s.set_state(v1::STUDY_RUNNING);
  s.set_nodes(2);
  s.set_gpus_per_node(4);
  s.set_trials_total(12);
  s.set_trials_done(3);
  const json sj = StudyJson(s);
  EXPECT_EQ(sj["state"], "running");
  EXPECT_EQ(sj["gpus"], 8);
  EXPECT_TRUE(sj["best_layout"].is_null());
  EXPECT_TRUE(sj["created"].is_null());
  EXPECT_EQ(sj["owner"], "");  // a planner that does not tell callers apart
  EXPECT_EQ(sj.size(), 19u);

  v1::Recommendation r;
  r.set_study_id(7);
  r.set_final(true);
  v1::RecommendedLayout* best = r.mutable_best_throughput();
  *best->mutable_layout() = MakeLayout(2, 4, 3, 2, 8);
  best->set_provenance(v1::MEASURED);
  best->set_trial_id(12);
  best->set_tokens_per_s(51234);
  best->mutable_full_run()->set_days(12.5);
  v1::RecommendedLayout* energy = r.mutable_best_energy();
  *energy->mutable_layout() = MakeLayout(1, 8, 0, 1, 4);
  energy->set_provenance(v1::PREDICTED);
  energy->set_trial_id(99);  // not measured: the id means nothing
  energy->set_tokens_per_joule(0.8);
  energy->set_energy_provenance(v1::PREDICTED);
  (*r.mutable_calibration())["compute_efficiency"] = 0.61;
  r.set_calibration_mape(0.072);
  r.set_calibration_samples(5);
  r.set_history_db("/tmp/planner.db");
  const json rj = RecommendationJson(r);
  EXPECT_EQ(rj["best_throughput"]["provenance"], "MEASURED");
  EXPECT_EQ(rj["best_throughput"]["trial_id"], 12);
  EXPECT_TRUE(rj["best_throughput"]["tokens_per_joule"].is_null());
  EXPECT_TRUE(rj["best_throughput"]["energy_provenance"].is_null());
  EXPECT_EQ(rj["best_throughput"]["full_run"]["days"], 12.5);
  EXPECT_EQ(rj["best_energy"]["provenance"], "PREDICTED");
  EXPECT_TRUE(rj["best_energy"]["trial_id"].is_null());
  EXPECT_TRUE(rj["best_energy"]["full_run"].is_null());
  EXPECT_EQ(rj["best_energy"]["energy_provenance"], "PREDICTED");
  EXPECT_EQ(rj["calibration"]["compute_efficiency"], 0.61);
  EXPECT_EQ(rj["calibration_samples"], 5);
  EXPECT_EQ(rj["history_db"], "/tmp/planner.db");
  EXPECT_TRUE(rj["gpu"].is_null());
  r.set_gpu_name("agents/cpu/x");
  r.mutable_gpu()->set_peak_dense_tflops(1.5);
  const json with_gpu = RecommendationJson(r);
  EXPECT_EQ(with_gpu["gpu_name"], "agents/cpu/x");
  EXPECT_EQ(with_gpu["gpu"], json({{"peak_dense_tflops", 1.5}}));
  EXPECT_TRUE(rj["pareto"].is_array());
}

TEST(StudyProgressTest, BarAndLine) {
  EXPECT_EQ(ProgressBar(0, 12, 10), "[----------]");
  EXPECT_EQ(ProgressBar(3, 12, 20), "[#####---------------]");
  EXPECT_EQ(ProgressBar(12, 12, 10), "[##########]");
  EXPECT_EQ(ProgressBar(5, 0, 4), "[----]");
  EXPECT_EQ(ProgressBar(15, 12, 4), "[####]");

  StudyProgress p;
  v1::StudyEvent start;
  start.mutable_study()->set_id(7);
  start.mutable_study()->set_state(v1::STUDY_QUEUED);
  start.mutable_study()->set_trials_total(12);
  p.Update(start);
  EXPECT_EQ(ProgressLine(p),
            "study 7 queued [--------------------] 0/12 trials, 0 running; "
            "no trial measured yet");

  v1::StudyEvent done;
  *done.mutable_study() = start.study();
  done.mutable_study()->set_state(v1::STUDY_RUNNING);
  done.mutable_study()->set_trials_done(3);
  done.mutable_study()->set_trials_running(2);
  *done.mutable_study()->mutable_best_layout() = MakeLayout(2, 4, 3, 2, 8);
  done.mutable_study()->set_best_tokens_per_s(5120.4);
  done.set_message("trial 12 ok: 5120 tokens/s");
  *done.mutable_trial() = OkTrial();
  done.set_unix_ms(1714564800000);
  p.Update(done);
  EXPECT_EQ(p.rung, 1);
  EXPECT_EQ(p.events, 2);
  const std::string line =
      "study 7 running [#####---------------] 3/12 trials, 2 running, rung "
      "1; best 5120 tokens/s tp=2,dp=4,zero=3,micro_batch=2,grad_accum=8";
  EXPECT_EQ(ProgressLine(p), line);
  EXPECT_EQ(EventLine(done, p),
            "2024-05-01T12:00:00Z trial 12 ok: 5120 tokens/s | " + line);
  // A later event about a rung-0 trial does not lower the rung.
  v1::StudyEvent late = done;
  late.mutable_trial()->set_rung(0);
  p.Update(late);
  EXPECT_EQ(p.rung, 1);
}

TEST(RecommendationOutputTest, LabelsEveryNumber) {
  v1::Recommendation r;
  r.set_study_id(7);
  r.set_final(true);
  v1::RecommendedLayout* best = r.mutable_best_throughput();
  *best->mutable_layout() = MakeLayout(2, 4, 3, 2, 8);
  best->set_provenance(v1::MEASURED);
  best->set_trial_id(12);
  best->set_tokens_per_s(51234);
  best->set_step_time_s(0.41);
  best->set_mfu(0.412);
  best->set_memory_gib_per_gpu(30.1);
  best->set_tokens_per_joule(0.812);
  best->set_energy_provenance(v1::MEASURED);
  best->mutable_predicted()->set_tokens_per_s(49000);
  best->mutable_full_run()->set_days(12.3);
  best->mutable_full_run()->set_energy_mwh(45.6);
  best->mutable_full_run()->set_gpu_hours(12345);
  best->set_why("exposed comm 12% of the step");
  *r.mutable_best_energy() = *best;
  r.set_calibration_mape(0.072);
  r.set_calibration_samples(5);
  r.set_history_db("/var/lib/tessera/planner.db");
  r.set_gpu_name("h100-sxm");
  r.mutable_gpu()->set_peak_dense_tflops(989.4);
  r.mutable_gpu()->set_memory_bytes(int64_t{80} << 30);
  r.mutable_gpu()->set_tdp_w(700);
  std::ostringstream out;
  PrintRecommendation(r, out);
  const std::string text = out.str();
  for (const char* expected :
       {"study 7 recommendation:\n",
        "best throughput: tp=2,sp=0,pp=1,vpp=1,cp=1,dp=4,zero=3,",
        "  MEASURED (trial 12): 51234 tokens/s, step 0.41 s, MFU 41.2%, "
        "30.1 GiB per GPU, exposed comm 0 s, bubble 0 s\n",
        "  energy: 0.812 tokens/J (MEASURED)\n",
        "  the calibrated model predicted: 49000 tokens/s",
        "  full run: 12.3 days, 45.6 MWh, 12345 GPU-hours (from MEASURED "
        "tokens/s)\n",
        "  why: exposed comm 12% of the step\n",
        "best energy: the same layout\n",
        "calibration: step-time MAPE 7.2% over 5 trials\n",
        "predicted for h100-sxm (989 TFLOP/s dense, 80.0 GiB, 700 W)\n",
        "history: /var/lib/tessera/planner.db (tessera trials --study 7"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n"
                                                      << text;
  }

  // A predicted-only recommendation (no trial ran): PREDICTED, no trial id,
  // no "predicted" comparison line, defaults for the calibration.
  v1::Recommendation p;
  p.set_study_id(8);
  p.set_final(true);
  *p.mutable_best_throughput() = *best;
  p.mutable_best_throughput()->set_provenance(v1::PREDICTED);
  p.mutable_best_throughput()->set_energy_provenance(v1::PREDICTED);
  *p.mutable_best_energy() = p.best_throughput();
  p.mutable_best_energy()->mutable_layout()->set_tp(1);
  std::ostringstream out2;
  PrintRecommendation(p, out2);
  const std::string t2 = out2.str();
  EXPECT_NE(t2.find("  PREDICTED: 51234 tokens/s"), std::string::npos) << t2;
  EXPECT_EQ(t2.find("MEASURED"), std::string::npos) << t2;
  EXPECT_EQ(t2.find("the calibrated model predicted"), std::string::npos);
  EXPECT_NE(t2.find("\nbest energy: tp=1,"), std::string::npos) << t2;
  EXPECT_NE(t2.find("calibration: the cost model's defaults"),
            std::string::npos);
  EXPECT_EQ(t2.find("history:"), std::string::npos);
  EXPECT_EQ(t2.find("GPU count:"), std::string::npos);  // not searched

  // A study that chose its GPU count says which count its figures are for.
  v1::RecommendationScale* scale = p.mutable_scale();
  scale->set_nodes(64);
  scale->set_gpus(512);
  scale->set_cluster_nodes(256);
  scale->set_cluster_gpus(2048);
  scale->set_objective("energy");
  scale->set_deadline_days(30);
  std::ostringstream scaled;
  PrintRecommendation(p, scaled);
  EXPECT_NE(scaled.str().find(
                "study 8 recommendation:\nGPU count: every figure below is "
                "for 512 GPUs (64 nodes), the count chosen for energy within "
                "30 days from the cluster's 2048 GPUs (256 nodes); the trials "
                "ran at that count, and the GPUs it leaves free are not "
                "charged (they can run other work)\nbest throughput: "),
            std::string::npos)
      << scaled.str();

  std::ostringstream out3;
  v1::Recommendation none;
  none.set_study_id(9);
  PrintRecommendation(none, out3);
  EXPECT_EQ(out3.str().rfind("study 9: no recommendation yet\n", 0), 0u);
}

TEST(TrialHistoryTest, MedianByHand) {
  EXPECT_FALSE(Median({}).has_value());
  EXPECT_EQ(*Median({3}), 3);
  EXPECT_EQ(*Median({5, 1, 3}), 3);
  EXPECT_EQ(*Median({4, 1, 3, 10}), 3.5);
}

// Five trials of one layout across two studies (three ok, one oom, one
// queued), one of another layout, and the first layout on another GPU.
TEST(TrialHistoryTest, GroupsByModelGpuGpusAndLayout) {
  google::protobuf::RepeatedPtrField<v1::Trial> trials;
  auto add = [&](int64_t id, int64_t study, v1::TrialState state,
                 double tokens_per_s, std::optional<double> watts,
                 const std::string& gpu = "h100-sxm") {
    v1::Trial t = OkTrial();
    t.set_id(id);
    t.set_study_id(study);
    t.set_state(state);
    t.set_gpu(gpu);
    t.set_created_unix_ms(kFirst + id * 1000);
    t.set_finished_unix_ms(0);
    if (state == v1::TRIAL_OK) {
      t.mutable_measured()->set_tokens_per_s(tokens_per_s);
      t.mutable_measured()->set_mfu(tokens_per_s / 100000);
      if (watts.has_value()) {
        t.mutable_measured()->set_watts_per_gpu(*watts);
        t.mutable_measured()->set_tokens_per_joule(tokens_per_s / 8 / *watts);
      } else {
        t.mutable_measured()->clear_watts_per_gpu();
        t.mutable_measured()->clear_tokens_per_joule();
      }
    } else {
      t.clear_measured();
    }
    *trials.Add() = t;
    return trials.Mutable(trials.size() - 1);
  };
  add(21, 3, v1::TRIAL_OK, 1000, 500);
  add(22, 3, v1::TRIAL_OOM, 0, std::nullopt);
  add(23, 4, v1::TRIAL_OK, 3000, std::nullopt);
  add(24, 4, v1::TRIAL_OK, 2000, 700);
  add(25, 4, v1::TRIAL_QUEUED, 0, std::nullopt);
  v1::Trial* other = add(26, 4, v1::TRIAL_OK, 2500, 600);
  other->mutable_layout()->set_tp(4);
  other->mutable_layout()->set_dp(2);
  add(27, 5, v1::TRIAL_OK, 9000, 650, "a100-sxm-80g");

  const std::vector<LayoutHistory> groups = GroupByLayout(trials);
  ASSERT_EQ(groups.size(), 3u);
  // Best first: a100 (9000), the five-trial group (3000), tp=4 (2500).
  EXPECT_EQ(groups[0].gpu, "a100-sxm-80g");
  const LayoutHistory& g = groups[1];
  EXPECT_EQ(g.gpu, "h100-sxm");
  EXPECT_EQ(g.model, "tiny");
  EXPECT_EQ(g.gpus, 8);  // tp 2 x dp 4
  EXPECT_EQ(g.trial_ids, (std::vector<int64_t>{21, 22, 23, 24, 25}));
  EXPECT_EQ(g.study_ids, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(g.ok, 3);
  EXPECT_EQ(g.failed, 1);
  EXPECT_EQ(*g.best_tokens_per_s, 3000);
  EXPECT_EQ(g.best_trial_id, 23);
  EXPECT_EQ(*g.median_tokens_per_s, 2000);
  EXPECT_EQ(*g.best_mfu, 0.03);
  EXPECT_EQ(*g.median_watts_per_gpu, 600);  // of 500 and 700: 23 has none
  EXPECT_DOUBLE_EQ(*g.best_tokens_per_joule, 2000.0 / 8 / 700);
  EXPECT_EQ(g.last_unix_ms, kFirst + 25000);
  EXPECT_EQ(groups[2].layout.tp(), 4);
  EXPECT_EQ(groups[2].gpus, 8);
  EXPECT_EQ(groups[2].trial_ids, std::vector<int64_t>{26});

  std::ostringstream table;
  PrintHistoryTable(groups, table);
  EXPECT_NE(table.str().find("3000 (trial 23)"), std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find(" 3,4 "), std::string::npos) << table.str();
  std::ostringstream csv;
  PrintHistoryCsv(groups, csv);
  const auto records = ParseCsv(csv.str());
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0][7], "best_tokens_per_s");
  EXPECT_EQ(records[2][7], "3000");
  EXPECT_EQ(records[2][14], "21 22 23 24 25");
  const json j = HistoryJson(groups);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[1]["trials"], json::array({21, 22, 23, 24, 25}));
  EXPECT_EQ(j[1]["best_trial_id"], 23);
  EXPECT_EQ(j[1]["layout"]["tp"], 2);

  // A group whose trials all failed has no numbers: "—" and null.
  google::protobuf::RepeatedPtrField<v1::Trial> failed;
  *failed.Add() = QueuedTrial();
  failed.Mutable(0)->set_state(v1::TRIAL_TIMEOUT);
  const std::vector<LayoutHistory> none = GroupByLayout(failed);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_FALSE(none[0].best_tokens_per_s.has_value());
  EXPECT_TRUE(HistoryJson(none)[0]["best_tokens_per_s"].is_null());
  std::ostringstream t2;
  PrintHistoryTable(none, t2);
  EXPECT_NE(t2.str().find("—"), std::string::npos);
}

}  // namespace
}  // namespace tessera::cli
