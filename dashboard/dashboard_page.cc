#include "dashboard/dashboard_page.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "cli/report_html.h"

namespace tessera::dashboard {
namespace {

constexpr char kScript[] = R"JS('use strict';
// The view shown: 0 for the study list, else a study id ("#study=ID").
const state = {study: 0, version: null, updates: 0, generation: 0};

function token() { return sessionStorage.getItem('tessera-token') || ''; }

function setState(what, message) {
  document.body.dataset.state = what;
  const line = document.getElementById('status');
  line.textContent = message || '';
}

function route() {
  const m = /^#study=(\d+)$/.exec(location.hash);
  return m ? Number(m[1]) : 0;
}

class Unauthorized extends Error {}

async function api(path) {
  const headers = token() ? {Authorization: 'Bearer ' + token()} : {};
  const r = await fetch(path, {headers: headers, cache: 'no-store'});
  if (r.status === 401) throw new Unauthorized(await r.text());
  if (!r.ok) throw new Error(path + ': ' + r.status + ' ' + (await r.text()));
  return r.json();
}

function show(view) {
  document.getElementById('main').innerHTML = view.html;
  document.title = view.title;
  state.version = view.version;
  document.body.dataset.version = view.version;
  setState('shown', '');
}

async function load() {
  state.study = route();
  show(await api(state.study ? '/api/studies/' + state.study
                             : '/api/studies'));
}

function sleep(ms) { return new Promise(done => setTimeout(done, ms)); }

// Waits on the planner for the view to change, then redraws it; again.
async function watch(generation) {
  while (generation === state.generation) {
    try {
      const w = await api('/api/wait?study=' + state.study + '&version=' +
                          encodeURIComponent(state.version));
      if (generation !== state.generation) return;
      if (w.version !== state.version) {
        await load();
        state.updates += 1;
        document.body.dataset.updates = String(state.updates);
      }
      await sleep(250);
    } catch (e) {
      if (e instanceof Unauthorized) return login(e.message);
      console.error('dashboard: ' + e.message);
      setState('error', 'cannot reach the planner (' + e.message +
                        '); trying again');
      await sleep(3000);
    }
  }
}

function login(why) {
  setState('login', why);
  document.getElementById('login').hidden = false;
}

function start() {
  state.generation += 1;
  const generation = state.generation;
  setState('loading', 'loading');
  load().then(() => watch(generation)).catch(e => {
    if (e instanceof Unauthorized) return login(e.message);
    console.error('dashboard: ' + e.message);
    setState('error', e.message);
  });
}

document.getElementById('login').addEventListener('submit', event => {
  event.preventDefault();
  const field = document.getElementById('token');
  sessionStorage.setItem('tessera-token', field.value.trim());
  field.value = '';
  document.getElementById('login').hidden = true;
  start();
});
window.addEventListener('hashchange', start);
document.body.dataset.updates = '0';
start();
)JS";

}  // namespace

absl::string_view DashboardPageHtml() {
  static const std::string* page = new std::string(absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>Tessera</title>\n",
      cli::StudyPageStyle(),
      "<style>\n#status { color: #8a5a00; min-height: 1.4em; }\n"
      "header { color: #67717d; border-bottom: 1px solid #d8dde3; "
      "padding-bottom: 0.4em; }\n</style>\n</head>\n"
      "<body data-state=\"loading\">\n"
      "<header>Tessera dashboard: read-only, redrawn as trials land "
      "(<a href=\"#\">studies</a>)</header>\n"
      "<p id=\"status\"></p>\n"
      "<form id=\"login\" hidden><label>This planner needs your token "
      "(principals file or --auth-token-file): <input id=\"token\" "
      "type=\"password\" autocomplete=\"off\" size=\"40\"></label> "
      "<button>Show the studies</button></form>\n"
      "<main id=\"main\"></main>\n"
      "<script src=\"/dashboard.js\"></script>\n</body>\n</html>\n"));
  return *page;
}

absl::string_view DashboardScript() { return kScript; }

}  // namespace tessera::dashboard
