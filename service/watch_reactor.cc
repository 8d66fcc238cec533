#include "service/watch_reactor.h"

#include "service/grpc_status.h"

namespace tessera::service {
namespace {

bool IsFinalState(v1::StudyState state) {
  return state == v1::STUDY_DONE || state == v1::STUDY_CANCELLED ||
         state == v1::STUDY_FAILED;
}

}  // namespace

grpc::ServerWriteReactor<v1::StudyEvent>* WatchReactor::Start(
    StudyEvents* events, int64_t study_id) {
  auto* r = new WatchReactor(events);
  // Subscribe first, so that nothing published after the snapshot is lost.
  r->subscription_ = events->hub().Subscribe(
      study_id, [r](const v1::StudyEvent& event) { r->Enqueue(event); });
  absl::StatusOr<v1::StudyEvent> first = events->CurrentEvent(study_id);
  if (!first.ok()) {
    r->End(ToGrpcStatus(first.status()));
    return r;
  }
  const v1::StudyEvent* next = nullptr;
  {
    absl::MutexLock lock(&r->mu_);
    r->queue_.push_front(*std::move(first));
    r->started_ = true;
    next = r->NextWriteLocked();
  }
  if (next != nullptr) r->StartWrite(next);
  return r;
}

void WatchReactor::Enqueue(const v1::StudyEvent& event) {
  const v1::StudyEvent* next = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (ending_) return;
    queue_.push_back(event);
    next = NextWriteLocked();
  }
  if (next != nullptr) StartWrite(next);
}

const v1::StudyEvent* WatchReactor::NextWriteLocked() {
  if (!started_ || writing_ || ending_ || queue_.empty()) return nullptr;
  writing_ = true;
  // Stays valid until OnWriteDone pops it (deque appends keep references).
  return &queue_.front();
}

void WatchReactor::OnWriteDone(bool ok) {
  grpc::Status end = grpc::Status::OK;
  bool finish = false;
  const v1::StudyEvent* next = nullptr;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    const bool last = IsFinalState(queue_.front().study().state());
    queue_.pop_front();
    if (!ok || cancelled_) {
      finish = true;
      end = grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
    } else if (last) {
      finish = true;
    } else {
      next = NextWriteLocked();
    }
  }
  if (next != nullptr) StartWrite(next);
  if (finish) End(end);
}

void WatchReactor::OnCancel() {
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    // A write in flight completes (not ok) and ends the stream there.
    if (writing_) return;
  }
  End(grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled"));
}

void WatchReactor::End(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (ending_) return;
    ending_ = true;
  }
  // After Unsubscribe returns the hub never calls Enqueue again.
  events_->hub().Unsubscribe(subscription_);
  Finish(status);
}

void WatchReactor::OnDone() {
  events_->hub().Unsubscribe(subscription_);
  delete this;
}

}  // namespace tessera::service
