#include "cli/trial_table.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/service_names.h"
#include "cli/text_table.h"
#include "cli/time_text.h"
#include "core/trial_backend.h"

namespace tessera::cli {
namespace {

// `text` when the trial was measured, else the placeholder.
std::string IfMeasured(const v1::Trial& t, const std::string& text) {
  return t.has_measured() ? text : kNotMeasured;
}

// Whether the trial's backend reports communication time (a command
// trial's framework does not: its 0 is no measurement).
bool MeasuresComm(const v1::Trial& t) {
  absl::StatusOr<const TrialBackend*> b =
      FindTrialBackend(t.measured().backend());
  return !b.ok() || (*b)->measures_comm;
}

}  // namespace

void PrintTrialTable(const Trials& trials, std::ostream& out,
                     size_t max_width) {
  // Too wide for max_width: the reason is cut and the layout wrapped first,
  // then the rung, steps, study, predicted tokens/s, watts, exposed comm,
  // memory and MFU go, in that order. With max_width 0 (-o wide) nothing is
  // cut.
  TextTable table(
      {TableColumn("id", kRight), TableColumn("study", kRight).Drop(3),
       TableColumn("rung", kRight).Drop(1), TableColumn("state"),
       TableColumn("layout").Wrap(28), TableColumn("steps", kRight).Drop(2),
       TableColumn("tokens/s", kRight), TableColumn("MFU", kRight).Drop(8),
       TableColumn("memory", kRight).Drop(7),
       TableColumn("exposed comm", kRight).Drop(6).Short("comm"),
       TableColumn("watts", kRight).Drop(5),
       TableColumn("predicted tokens/s", kRight).Drop(4).Short("predicted"),
       TableColumn("reason").Cut(16)});
  // Memory in one unit for the whole column: its largest value's.
  double max_memory_bytes = 0;
  for (const v1::Trial& t : trials) {
    max_memory_bytes =
        std::max(max_memory_bytes,
                 static_cast<double>(t.measured().peak_memory_bytes()));
  }
  for (const v1::Trial& t : trials) {
    const v1::TrialMetrics& m = t.measured();
    table.AddRow({
        absl::StrCat(t.id()),
        absl::StrCat(t.study_id()),
        absl::StrCat(t.rung()),
        std::string(TrialStateName(t.state())),
        CompactLayout(t.layout()),
        absl::StrCat(t.steps()),
        IfMeasured(t, absl::StrFormat("%.0f", m.tokens_per_s())),
        m.mfu() > 0 ? IfMeasured(t, absl::StrFormat("%.1f%%", 100 * m.mfu()))
                    : kNotMeasured,
        IfMeasured(t,
                   ReadableBytesIn(static_cast<double>(m.peak_memory_bytes()),
                                   max_memory_bytes)),
        MeasuresComm(t)
            ? IfMeasured(t, absl::StrCat(Readable(m.exposed_comm_s()), " s"))
            : kNotMeasured,
        t.has_measured() && m.has_watts_per_gpu()
            ? absl::StrFormat("%.0f W", m.watts_per_gpu())
            : kNotMeasured,
        t.has_predicted()
            ? absl::StrFormat("%.0f", t.predicted().tokens_per_s())
            : kNotMeasured,
        max_width > 0 ? Truncate(t.reason(), kReasonWidth) : t.reason(),
    });
  }
  table.Print(out, max_width);
}

void PrintTrialCsv(const Trials& trials, std::ostream& out) {
  out << CsvLine({"id", "study_id", "rung", "state", "layout", "steps",
                  "tokens_per_s", "mfu", "peak_memory_bytes", "exposed_comm_s",
                  "watts_per_gpu", "predicted_tokens_per_s", "reason", "model",
                  "gpu", "created"});
  for (const v1::Trial& t : trials) {
    const v1::TrialMetrics& m = t.measured();
    const bool measured = t.has_measured();
    auto metric = [&](double value) {
      return CsvNumber(measured ? std::optional<double>(value) : std::nullopt);
    };
    out << CsvLine({
        absl::StrCat(t.id()),
        absl::StrCat(t.study_id()),
        absl::StrCat(t.rung()),
        std::string(TrialStateName(t.state())),
        CompactLayout(t.layout()),
        absl::StrCat(t.steps()),
        metric(m.tokens_per_s()),
        metric(m.mfu()),
        measured ? absl::StrCat(m.peak_memory_bytes()) : "",
        metric(m.exposed_comm_s()),
        CsvNumber(measured && m.has_watts_per_gpu()
                      ? std::optional<double>(m.watts_per_gpu())
                      : std::nullopt),
        CsvNumber(t.has_predicted()
                      ? std::optional<double>(t.predicted().tokens_per_s())
                      : std::nullopt),
        t.reason(),
        t.model(),
        t.gpu(),
        FormatUnixMs(t.created_unix_ms()),
    });
  }
}

}  // namespace tessera::cli
