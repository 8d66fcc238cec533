// The agent's log: one line per event ("registered with 127.0.0.1:50051",
// "leased trial 12", "trial 12 ok 5120 tokens/s", "planner unreachable:
// retrying in 1.6s"), each stamped with the UTC time and the agent's id,
// written whole (lines from several threads never interleave).
//
//   EventLog log(stderr, "node1-cpu");
//   log.Log(absl::StrCat("leased trial ", id));
#pragma once

#include <cstdio>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace tessera::agents {

class EventLog {
 public:
  // Writes to `out` (not owned; stderr or an opened --log file).
  EventLog(std::FILE* out, std::string agent_id);

  // One line (a trailing newline is added; inner ones are kept).
  void Log(absl::string_view line);

 private:
  absl::Mutex mutex_;
  std::FILE* out_ ABSL_GUARDED_BY(mutex_);
  const std::string agent_id_;
};

}  // namespace tessera::agents
