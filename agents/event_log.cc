#include "agents/event_log.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tessera::agents {

EventLog::EventLog(std::FILE* out, std::string agent_id)
    : out_(out), agent_id_(std::move(agent_id)) {}

void EventLog::Log(absl::string_view line) {
  const std::string text =
      absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                                    absl::UTCTimeZone()),
                   " tessera-agent[", agent_id_, "] ", line, "\n");
  absl::MutexLock lock(&mutex_);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

}  // namespace tessera::agents
