// WatchStudy's server stream: the study as it stands first, then every event
// the planner publishes for it, in order; the stream finishes OK after the
// first event whose study is done, cancelled or failed (at once for a final
// study), NOT_FOUND for an unknown study, and CANCELLED when the client goes
// away (the subscription is dropped either way).
//
//   return WatchReactor::Start(planner, request->study_id());
#pragma once

#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/support/server_callback.h"
#include "service/study_events.h"
#include "tessera/v1/service.pb.h"

namespace tessera::service {

class WatchReactor final : public grpc::ServerWriteReactor<v1::StudyEvent> {
 public:
  // Subscribes, then writes the current state; the reactor deletes itself
  // when the RPC is done.
  static grpc::ServerWriteReactor<v1::StudyEvent>* Start(StudyEvents* events,
                                                         int64_t study_id);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  explicit WatchReactor(StudyEvents* events) : events_(events) {}

  // The hub's sink.
  void Enqueue(const v1::StudyEvent& event);
  // The event to write next (marked as being written), or nullptr; the
  // caller starts the write after releasing mu_.
  const v1::StudyEvent* NextWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the subscription and finishes once.
  void End(const grpc::Status& status);

  StudyEvents* const events_;
  int64_t subscription_ = 0;  // set before any event can arrive

  absl::Mutex mu_;
  std::deque<v1::StudyEvent> queue_ ABSL_GUARDED_BY(mu_);  // front: writing
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tessera::service
