// What `tessera watch` shows while a study runs: its progress as one line
// (trials done of total with a bar, running, the successive-halving rung,
// the best layout and its tokens/s so far), redrawn in place on a terminal,
// or one line per event (with its time and message) when the output is a
// file or a pipe.
//
//   StudyProgress progress;
//   progress.Update(event);
//   out << "\r" << ProgressLine(progress) << "\x1b[K";   // a terminal
//   out << EventLine(event, progress) << "\n";           // a log
//   // "study 7 running [######--------------] 3/12 trials, 2 running,
//   //  rung 1; best 5120 tokens/s tp=2,dp=4,micro_batch=2"
#pragma once

#include <cstdint>
#include <string>

#include "tessera/v1/service.pb.h"

namespace tessera::cli {

// The study as its events have told it so far.
struct StudyProgress {
  v1::StudySummary study;
  int64_t rung = -1;  // the highest rung of a trial seen; -1: none yet
  int64_t events = 0;

  // Takes the event's study summary and its trial's rung.
  void Update(const v1::StudyEvent& event);
};

// "[######--------------]": `done` of `total` as `width` characters ("#"
// done, "-" to do); all "-" when total is 0.
std::string ProgressBar(int64_t done, int64_t total, int width);

// The progress line (no line break).
std::string ProgressLine(const StudyProgress& progress);

// "2024-05-01T12:03:04Z trial 12 ok: 5120 tokens/s | <progress line>" for
// the event (its message, or the progress alone when it has none).
std::string EventLine(const v1::StudyEvent& event,
                      const StudyProgress& progress);

}  // namespace tessera::cli
