// The study events WatchStudy streams: the planner publishes, each watcher
// subscribes to one study. Delivery is synchronous on the publisher's thread,
// in publication order, one event at a time per hub.
//
//   int64_t id = hub.Subscribe(study_id, [&](const v1::StudyEvent& e) {...});
//   hub.Publish(event);   // every sink of event.study().id()
//   hub.Unsubscribe(id);  // the sink never runs again
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tessera/v1/service.pb.h"

namespace tessera::service {

class EventHub {
 public:
  // Called with the hub's lock held: it must be quick and must not call the
  // hub.
  using Sink = std::function<void(const v1::StudyEvent&)>;

  // `sink` receives every event of `study_id` published after this returns.
  // Returns the subscription's id.
  int64_t Subscribe(int64_t study_id, Sink sink);
  // When this returns, the subscription's sink is not running and never runs
  // again. Unknown ids are ignored.
  void Unsubscribe(int64_t subscription);
  bool HasSubscribers(int64_t study_id) const;
  // Delivers `event` to the subscribers of event.study().id().
  void Publish(const v1::StudyEvent& event);

 private:
  struct Subscription {
    int64_t study_id = 0;
    Sink sink;
  };
  mutable absl::Mutex mu_;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, Subscription> subscriptions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::service
