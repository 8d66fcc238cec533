// What the dashboard shows, read from the planner's store: the study list,
// and one study as `tessera report`'s sections (cli/report_html.h
// StudyPageSections: the recommendation, the Pareto front, measured against
// predicted with the error band, the knobs in parallel coordinates, loss
// and step time per step, the step breakdowns, the timeline per agent, the
// trials, the calibration with fitted and default coefficients marked, the
// spec). Each view has a version that changes when what it shows changes,
// so that the page redraws only then.
//
//   DashboardViews views(store.get());
//   TESSERA_ASSIGN_OR_RETURN(View v, views.Study(7, absl::Now()));
//   // v.html: the sections; v.version: "9f1c..."
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "db/trial_store.h"

namespace tessera::dashboard {

struct View {
  std::string version = {};  // changes when the view's content changes
  std::string title = {};    // for the page's <title>
  std::string html = {};     // the view, every text from the store escaped
};

class DashboardViews {
 public:
  // `store` must outlive the views; they only read it.
  explicit DashboardViews(db::TrialStore* store) : store_(store) {}

  // Every study, newest first: a table whose ids link to "#study=ID"; a
  // sentence when there is none.
  absl::StatusOr<View> Studies() const;
  // Study `study_id`'s sections as of `now` (a running trial's timeline
  // span ends there); NOT_FOUND "study N: ..." for an unknown id.
  absl::StatusOr<View> Study(int64_t study_id, absl::Time now) const;
  // The version of Studies() (study_id 0) or of Study(study_id) without
  // drawing it: the study's summary and recommendation as stored.
  absl::StatusOr<std::string> Version(int64_t study_id) const;

 private:
  db::TrialStore* store_;
};

}  // namespace tessera::dashboard
