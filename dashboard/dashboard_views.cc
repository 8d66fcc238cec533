#include "dashboard/dashboard_views.h"

#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/report_html.h"
#include "cli/report_predictions.h"
#include "cli/service_names.h"
#include "cli/text_table.h"
#include "cli/time_text.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message.h"
#include "service/study_queries.h"

namespace tessera::dashboard {
namespace {

// A short, stable digest of `text` (the version of a view).
std::string Digest(const std::string& text) {
  return absl::StrFormat("%016x", std::hash<std::string>{}(text));
}

// `m`'s bytes, the same for equal messages: maps in key order (a map's
// default serialization order is not defined, and a version that changed
// without its view would redraw the page at every wait).
std::string StableBytes(const google::protobuf::Message& m) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// The stored recommendation, or an empty one while the study has none.
v1::Recommendation RecommendationOrEmpty(const service::StudyQueries& q,
                                         int64_t study_id) {
  absl::StatusOr<v1::Recommendation> r = q.GetRecommendation(study_id);
  return r.ok() ? *std::move(r) : v1::Recommendation();
}

}  // namespace

absl::StatusOr<std::string> DashboardViews::Version(int64_t study_id) const {
  const service::StudyQueries q(store_);
  if (study_id == 0) {
    absl::StatusOr<v1::ListStudiesResponse> all = q.ListStudies({});
    if (!all.ok()) return all.status();
    return Digest(StableBytes(*all));
  }
  absl::StatusOr<v1::GetStudyResponse> study = q.GetStudy(study_id);
  if (!study.ok()) return study.status();
  return Digest(absl::StrCat(StableBytes(*study),
                             StableBytes(RecommendationOrEmpty(q, study_id))));
}

absl::StatusOr<View> DashboardViews::Studies() const {
  const service::StudyQueries q(store_);
  absl::StatusOr<v1::ListStudiesResponse> all = q.ListStudies({});
  if (!all.ok()) return all.status();
  View v{.version = Digest(StableBytes(*all)), .title = "Tessera studies"};
  v.html = absl::StrCat("<h1>Studies (", all->studies_size(), ")</h1>\n");
  if (all->studies_size() == 0) {
    absl::StrAppend(&v.html,
                    "<p class=\"muted\">No study yet: `tessera submit "
                    "study.json` starts one; it appears here as it is "
                    "queued.</p>\n");
    return v;
  }
  absl::StrAppend(&v.html,
                  "<div class=\"scroll\"><table class=\"studies\"><tr>"
                  "<th>id</th><th>name</th><th>state</th><th>model</th>"
                  "<th>GPUs</th><th>trials</th><th>running</th>"
                  "<th>best tokens/s</th><th>best layout</th>"
                  "<th>updated</th><th>owner</th></tr>\n");
  using cli::HtmlEscape;
  for (const v1::StudySummary& s : all->studies()) {
    const bool best = s.has_best_layout() && s.best_tokens_per_s() > 0;
    absl::StrAppend(
        &v.html, "<tr data-study=\"", s.id(),
        "\"><td class=\"n\"><a href=\"#study=", s.id(), "\">", s.id(),
        "</a></td><td>", HtmlEscape(s.name()), "</td><td>",
        HtmlEscape(cli::StudyStateName(s.state())),
        s.state_reason().empty()
            ? ""
            : absl::StrCat("<br><span class=\"muted\">",
                           HtmlEscape(s.state_reason()), "</span>"),
        "</td><td>", HtmlEscape(s.model()), "</td><td class=\"n\">",
        s.nodes() * s.gpus_per_node(), " ", HtmlEscape(s.gpu()),
        "</td><td class=\"n\">", s.trials_done(), "/", s.trials_total(),
        "</td><td class=\"n\">", s.trials_running(), "</td><td class=\"n\">",
        best ? HtmlEscape(cli::Readable(s.best_tokens_per_s())) : "—",
        "</td><td><code>",
        best ? HtmlEscape(cli::CompactLayout(s.best_layout())) : "",
        "</code></td><td>", HtmlEscape(cli::FormatUnixMs(s.updated_unix_ms())),
        "</td><td>", HtmlEscape(s.owner()), "</td></tr>\n");
  }
  absl::StrAppend(&v.html, "</table></div>\n");
  return v;
}

absl::StatusOr<View> DashboardViews::Study(int64_t study_id,
                                           absl::Time now) const {
  const service::StudyQueries q(store_);
  cli::StudyReport report;
  report.generated = now;
  absl::StatusOr<v1::GetStudyResponse> study = q.GetStudy(study_id);
  if (!study.ok()) return study.status();
  report.study = *std::move(study);
  report.recommendation = RecommendationOrEmpty(q, study_id);
  v1::ListTrialsRequest request;
  request.set_study_id(study_id);
  request.set_sort("id");
  request.set_limit(1'000'000);
  absl::StatusOr<v1::ListTrialsResponse> trials = q.ListTrials(request);
  if (!trials.ok()) return trials.status();
  report.trials.assign(trials->trials().begin(), trials->trials().end());
  report.breakdowns =
      cli::PredictTrialBreakdowns(report.trials, report.recommendation);
  View v{.version = Digest(absl::StrCat(StableBytes(report.study),
                                        StableBytes(report.recommendation))),
         .title = absl::StrCat("Tessera study ", study_id, ": ",
                               report.study.study().name())};
  v.html = absl::StrCat("<p><a href=\"#\">all studies</a></p>\n",
                        cli::StudyPageSections(report));
  return v;
}

}  // namespace tessera::dashboard
