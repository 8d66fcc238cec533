// -o table|wide|json|csv: the flags (aliases, clashes, bad formats reported
// with the other flag errors), RFC 4180 CSV, and tables that fit 100 columns
// with realistic trials, studies and history (long layouts, failure
// reasons, seven-digit tokens/s) while -o wide keeps every column.
#include "cli/output_format.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "cli/service_names.h"
#include "cli/studies_command.h"
#include "cli/text_table.h"
#include "cli/trial_history.h"
#include "cli/trial_table.h"
#include "core/flags.h"
#include "gtest/gtest.h"

namespace tessera::cli {
namespace {

// The format `args` ask for, or the parse error.
std::string FormatOf(const std::vector<std::string>& args, bool csv = true) {
  FlagSet flags("tessera test");
  OutputFlags output;
  output.Register(&flags, csv);
  const absl::Status s = flags.Parse(args);
  if (!s.ok()) return std::string(s.message());
  return std::string(OutputFormatName(output.format()));
}

TEST(OutputFlagsTest, FormatsAliasesAndErrors) {
  EXPECT_EQ(FormatOf({}), "table");
  EXPECT_EQ(FormatOf({"-o", "csv"}), "csv");
  EXPECT_EQ(FormatOf({"-o=wide"}), "wide");
  EXPECT_EQ(FormatOf({"--output", "json"}), "json");
  EXPECT_EQ(FormatOf({"--json"}), "json");
  EXPECT_EQ(FormatOf({"--csv"}), "csv");
  EXPECT_EQ(FormatOf({"--json", "-o", "json"}), "json");  // they agree
  EXPECT_EQ(FormatOf({"-o", "xml"}),
            "--output: 'xml' is not a format (table, wide, json, csv)");
  EXPECT_EQ(FormatOf({"--json", "-o", "csv"}),
            "--json: conflicts with --output csv");
  EXPECT_EQ(FormatOf({"--json", "--csv"}),
            "--csv: give --json or --csv, not both");
  EXPECT_EQ(FormatOf({"--csv"}, /*csv=*/false),
            "--csv: unknown flag (see tessera test --help)");
  // A bad format is reported beside the other problems, one line each.
  EXPECT_EQ(FormatOf({"--limt", "3", "-o", "yaml"}),
            "--limt: unknown flag (see tessera test --help)\n"
            "--output: 'yaml' is not a format (table, wide, json, csv)");
}

TEST(CsvTest, Rfc4180Quoting) {
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(CsvField("tp=2,dp=4"), "\"tp=2,dp=4\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField("cr\r"), "\"cr\r\"");
  EXPECT_EQ(CsvLine({"a", "b,c", ""}), "a,\"b,c\",\n");
  EXPECT_EQ(CsvNumber(0.1), "0.1");
  EXPECT_EQ(CsvNumber(1234567.25), "1234567.25");  // full precision
  EXPECT_EQ(CsvNumber(std::nullopt), "");
}

v1::Layout BigLayout(int64_t tp, int64_t pp, int64_t dp) {
  v1::Layout l;
  l.set_tp(tp);
  l.set_sp(true);
  l.set_pp(pp);
  l.set_vpp(2);
  l.set_cp(2);
  l.set_dp(dp);
  l.set_zero(1);
  l.set_shard_group(dp);
  l.set_micro_batch(1);
  l.set_grad_accum(16);
  l.set_recompute("selective");
  return l;
}

// A 70B study's trials at 1024 GPUs: ok ones with every number, failures
// with long reasons, a queued one.
Trials RealisticTrials() {
  Trials trials;
  for (int i = 0; i < 12; ++i) {
    v1::Trial* t = trials.Add();
    t->set_id(10234 + i);
    t->set_study_id(117);
    t->set_rung(i % 3);
    t->set_model("llama3-70b");
    t->set_gpu("h100-sxm");
    t->set_steps(100);
    *t->mutable_layout() = BigLayout(8, 4 << (i % 2), 16);
    t->mutable_predicted()->set_tokens_per_s(1234567.8 + i);
    if (i % 4 == 3) {
      t->set_state(v1::TRIAL_OOM);
      t->set_reason(
          "rank 517 ran out of memory: tried to allocate 2.50 GiB (GPU 5; "
          "79.10 GiB total capacity; 76.90 GiB already allocated)");
      continue;
    }
    if (i == 11) {
      t->set_state(v1::TRIAL_QUEUED);
      continue;
    }
    t->set_state(v1::TRIAL_OK);
    v1::TrialMetrics* m = t->mutable_measured();
    m->set_backend("cuda");
    m->set_tokens_per_s(1198765.4 - 1000 * i);
    m->set_mfu(0.4123);
    m->set_peak_memory_bytes(int64_t{71} << 30);
    m->set_exposed_comm_s(0.8125);
    m->set_watts_per_gpu(687.3);
  }
  return trials;
}

// The lines of `text` and the widest one's characters.
size_t WidestLine(const std::string& text) {
  std::istringstream lines(text);
  size_t widest = 0;
  for (std::string line; std::getline(lines, line);) {
    widest = std::max(widest, DisplayWidth(line));
  }
  return widest;
}

std::string Header(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

TEST(TableWidthTest, TrialsFit100ColumnsAndWideShowsEveryColumn) {
  const Trials trials = RealisticTrials();
  std::ostringstream table, wide;
  PrintTrialTable(trials, table, kTableWidth);
  PrintTrialTable(trials, wide, 0);
  EXPECT_LE(WidestLine(table.str()), kTableWidth) << table.str();
  EXPECT_GT(WidestLine(wide.str()), kTableWidth) << wide.str();
  // The table keeps what identifies a trial and what it gave.
  const std::string header = Header(table.str());
  for (const char* column : {"id", "state", "layout", "tokens/s"}) {
    EXPECT_NE(header.find(column), std::string::npos) << header;
  }
  EXPECT_NE(table.str().find("10234"), std::string::npos);
  EXPECT_NE(table.str().find("1198765"), std::string::npos);
  EXPECT_NE(table.str().find("oom"), std::string::npos);
  // Wide shows every column, whole.
  const std::string wide_header = Header(wide.str());
  for (const char* column :
       {"id", "study", "rung", "state", "layout", "steps", "tokens/s", "MFU",
        "memory", "exposed comm", "watts", "predicted tokens/s", "reason"}) {
    EXPECT_NE(wide_header.find(column), std::string::npos) << column;
  }
  EXPECT_NE(wide.str().find("tp=8,sp=1,pp=8,vpp=2,cp=2,dp=16,zero=1"),
            std::string::npos)
      << wide.str();
}

TEST(TableWidthTest, StudiesAndHistoryFit100Columns) {
  v1::ListStudiesResponse studies;
  for (int i = 0; i < 5; ++i) {
    v1::StudySummary* s = studies.add_studies();
    s->set_id(117 + i);
    s->set_name("llama3-70b-1024xh100-seq8192-gbs1024-async-tp-fp8-sweep");
    s->set_state(i == 4 ? v1::STUDY_FAILED : v1::STUDY_RUNNING);
    s->set_state_reason(i == 4 ? "no agent can serve the study's GPU "
                                 "h100-sxm: 0 of 128 nodes registered"
                               : "");
    s->set_model("llama3-70b");
    s->set_gpu("h100-sxm");
    s->set_nodes(128);
    s->set_gpus_per_node(8);
    s->set_trials_total(64);
    s->set_trials_done(37);
    s->set_trials_running(8);
    s->set_updated_unix_ms(1714564800000);
    *s->mutable_best_layout() = BigLayout(8, 4, 16);
    s->set_best_tokens_per_s(1198765.4);
  }
  std::ostringstream table, wide, csv;
  PrintStudyTable(studies, table, kTableWidth);
  PrintStudyTable(studies, wide, 0);
  PrintStudyCsv(studies, csv);
  EXPECT_LE(WidestLine(table.str()), kTableWidth) << table.str();
  EXPECT_GT(WidestLine(wide.str()), kTableWidth) << wide.str();
  for (const char* column : {"id", "state", "GPUs", "trials"}) {
    EXPECT_NE(Header(table.str()).find(column), std::string::npos)
        << table.str();
  }
  EXPECT_NE(table.str().find("1198765"), std::string::npos) << table.str();
  EXPECT_NE(Header(wide.str()).find("updated"), std::string::npos);
  // CSV: raw numbers, the whole name, layouts quoted.
  EXPECT_EQ(Header(csv.str()),
            "id,name,state,model,gpu,gpus,trials_done,trials_total,"
            "trials_running,best_tokens_per_s,best_layout,updated,reason");
  EXPECT_NE(csv.str().find(",1198765.4,\"tp=8,sp=1,pp=4"), std::string::npos)
      << csv.str();

  const std::vector<LayoutHistory> groups = GroupByLayout(RealisticTrials());
  std::ostringstream history, history_wide;
  PrintHistoryTable(groups, history, kTableWidth);
  PrintHistoryTable(groups, history_wide, 0);
  EXPECT_LE(WidestLine(history.str()), kTableWidth) << history.str();
  EXPECT_GT(WidestLine(history_wide.str()), kTableWidth);
  EXPECT_NE(Header(history.str()).find("best tokens/s"), std::string::npos)
      << history.str();
}

TEST(TableWidthTest, CutsBeforeDroppingAndDropsTheLowestRankFirst) {
  TextTable table({{"id", kRight},
                   TableColumn("note").Cut(6),
                   TableColumn("a").Drop(2),
                   TableColumn("b").Drop(1)});
  table.AddRow({"1", "a long note here", "aaaa", "bbbb"});
  std::ostringstream full, cut, dropped, min;
  table.Print(full);
  EXPECT_EQ(full.str(),
            "id  note              a     b\n"
            " 1  a long note here  aaaa  bbbb\n");
  table.Print(cut, 24);  // cutting the note to 8 saves enough
  EXPECT_EQ(cut.str(),
            "id  note      a     b\n"
            " 1  a long …  aaaa  bbbb\n");
  table.Print(dropped, 18);  // cutting cannot: b goes, then the note is cut
  EXPECT_EQ(dropped.str(),
            "id  note      a\n"
            " 1  a long …  aaaa\n");
  table.Print(min, 5);  // b and a go; the note is cut to its minimum
  EXPECT_EQ(min.str(),
            "id  note\n"
            " 1  a lon…\n");
}

TEST(TableWidthTest, WrapsLayoutsAtCommasAndNeverCutsThem) {
  TextTable table({{"id", kRight},
                   TableColumn("layout").Wrap(12),
                   TableColumn("note").Cut(4)});
  table.AddRow({"1", "tp=8,sp=1,pp=4,micro_batch=2", "a long note"});
  table.AddRow({"2", "dp=8", "ok"});
  std::ostringstream out;
  table.Print(out, 24);
  // The layout narrows to its longest piece (13), the note takes the rest.
  EXPECT_EQ(out.str(),
            "id  layout         note\n"
            " 1  tp=8,sp=1,     a lo…\n"
            "    pp=4,\n"
            "    micro_batch=2\n"
            " 2  dp=8           ok\n")
      << out.str();
  // The column is never narrower than its longest piece.
  EXPECT_EQ(WrapText("tp=8,micro_batch=2", 4),
            (std::vector<std::string>{"tp=8,", "micro_batch=2"}));
  EXPECT_EQ(WrapText("", 4), (std::vector<std::string>{""}));
  EXPECT_EQ(WrapText("a,b,c", 10), (std::vector<std::string>{"a,b,c"}));
}

TEST(TableWidthTest, TablesFitting100ColumnsKeepEveryLayoutWhole) {
  // Each trial's, study's and history group's layout, in any table, is
  // there in full: its parts in order, across wrapped lines.
  const Trials trials = RealisticTrials();
  std::ostringstream out;
  PrintTrialTable(trials, out, kTableWidth);
  std::string joined;
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) joined += line + "\n";
  EXPECT_EQ(joined.find("…,"), std::string::npos) << joined;
  for (const v1::Trial& t : trials) {
    const std::string layout = CompactLayout(t.layout());
    size_t at = 0;
    for (absl::string_view part : absl::StrSplit(layout, ',')) {
      at = joined.find(std::string(part), at);
      ASSERT_NE(at, std::string::npos) << part << " of " << layout << "\n"
                                       << joined;
    }
  }
}

// A study named with an escape sequence (the review's: names reach every
// user's `tessera studies`) prints as inert text.
TEST(TableTextTest, ControlCharactersNeverReachTheTerminal) {
  EXPECT_EQ(PrintableCell("ok\x1b[2J\x1b]0;pwned\x07 done"),
            "ok?[2J?]0;pwned? done");
  EXPECT_EQ(PrintableCell("line\nbreak\ttab\r"), "line break tab ");
  EXPECT_EQ(PrintableCell("c1 \xc2\x9b"
                          "31m"),
            "c1 ?31m");  // U+009B CSI
  EXPECT_EQ(PrintableCell("caf\xc3\xa9 \xe2\x80\x94"),
            "caf\xc3\xa9 \xe2\x80\x94");
  TextTable table({{"name"}});
  table.AddRow({"evil\x1b[31mred"});
  std::ostringstream out;
  table.Print(out);
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos) << out.str();
}

}  // namespace
}  // namespace tessera::cli
