#include "cli/trial_table.h"

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

std::string CsvNumber(std::optional<double> value) {
  if (!value.has_value()) return "";
  char buffer[64];
  const std::to_chars_result r =
      std::to_chars(buffer, buffer + sizeof(buffer), *value);
  return std::string(buffer, r.ptr);
}

void PrintTrialTable(const Trials& trials, std::ostream& out) {
  TextTable table({{"id", kRight},
                   {"study", kRight},
                   {"rung", kRight},
                   {"state", kLeft},
                   {"layout", kLeft},
                   {"steps", kRight},
                   {"tokens/s", kRight},
                   {"MFU", kRight},
                   {"memory", kRight},
                   {"exposed comm", kRight},
                   {"watts", kRight},
                   {"predicted tokens/s", kRight},
                   {"reason", kLeft}});
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
                   ReadableBytes(static_cast<double>(m.peak_memory_bytes()))),
        MeasuresComm(t)
            ? IfMeasured(t, absl::StrCat(Readable(m.exposed_comm_s()), " s"))
            : kNotMeasured,
        t.has_measured() && m.has_watts_per_gpu()
            ? absl::StrFormat("%.0f W", m.watts_per_gpu())
            : kNotMeasured,
        t.has_predicted()
            ? absl::StrFormat("%.0f", t.predicted().tokens_per_s())
            : kNotMeasured,
        Truncate(t.reason(), kReasonWidth),
    });
  }
  table.Print(out);
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
