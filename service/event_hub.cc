#include "service/event_hub.h"

namespace tessera::service {

int64_t EventHub::Subscribe(int64_t study_id, Sink sink) {
  absl::MutexLock lock(&mu_);
  const int64_t id = next_id_++;
  subscriptions_.emplace(id, Subscription{study_id, std::move(sink)});
  return id;
}

void EventHub::Unsubscribe(int64_t subscription) {
  absl::MutexLock lock(&mu_);
  subscriptions_.erase(subscription);
}

bool EventHub::HasSubscribers(int64_t study_id) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, s] : subscriptions_) {
    if (s.study_id == study_id) return true;
  }
  return false;
}

void EventHub::Publish(const v1::StudyEvent& event) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, s] : subscriptions_) {
    if (s.study_id == event.study().id()) s.sink(event);
  }
}

}  // namespace tessera::service
