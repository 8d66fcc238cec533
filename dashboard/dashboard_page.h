// The dashboard's page and its script, as the planner serves them: a shell
// with no data in it (GET /) whose script asks the JSON API for the views
// (dashboard_views.h) with the token the person gives once (kept for the
// browser tab in sessionStorage), shows them, and waits on the API for the
// next change to redraw without a reload. Nothing on the page writes: it
// has no form but the token's and calls nothing but GETs.
//
// The script sets on <body>: data-version (of the view shown), data-updates
// (redraws since the page loaded, without reloading it) and data-state
// ("loading", "shown", "login", "error"); tests read them.
#pragma once

#include "absl/strings/string_view.h"

namespace tessera::dashboard {

// GET / : the page (HTML, styled as `tessera report`'s page).
absl::string_view DashboardPageHtml();

// GET /dashboard.js : its script.
absl::string_view DashboardScript();

}  // namespace tessera::dashboard
