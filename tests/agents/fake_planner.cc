#include "tests/agents/fake_planner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tessera::agents::testing {

FakePlanner::FakePlanner() { Start(); }

FakePlanner::~FakePlanner() { Shutdown(); }

std::string FakePlanner::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

void FakePlanner::Start() {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", port_),
                           grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
}

void FakePlanner::Shutdown() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  server_.reset();
}

void FakePlanner::SetIntervals(int64_t heartbeat_ms, int64_t lease_poll_ms) {
  absl::MutexLock lock(&mutex_);
  heartbeat_ms_ = heartbeat_ms;
  lease_poll_ms_ = lease_poll_ms;
}

void FakePlanner::Queue(const v1::TrialAssignment& assignment,
                        const std::vector<std::string>& agents) {
  absl::MutexLock lock(&mutex_);
  queue_.push_back(Queued{assignment, agents});
  holders_[assignment.trial_id()].insert(agents.begin(), agents.end());
}

void FakePlanner::Hold(int64_t trial_id,
                       const std::vector<std::string>& agents) {
  absl::MutexLock lock(&mutex_);
  holders_[trial_id].insert(agents.begin(), agents.end());
}

void FakePlanner::Revoke(int64_t trial_id) {
  absl::MutexLock lock(&mutex_);
  holders_.erase(trial_id);
}

void FakePlanner::Cancel(int64_t trial_id) {
  absl::MutexLock lock(&mutex_);
  for (const std::string& agent : holders_[trial_id]) {
    cancels_[agent].insert(trial_id);
  }
  holders_.erase(trial_id);
}

void FakePlanner::ForgetAgents() {
  absl::MutexLock lock(&mutex_);
  agents_.clear();
}

void FakePlanner::FailReports(grpc::StatusCode code) {
  absl::MutexLock lock(&mutex_);
  fail_reports_ = code;
}

int64_t FakePlanner::report_attempts() const {
  absl::MutexLock lock(&mutex_);
  return report_attempts_;
}

std::vector<FakePlanner::Report> FakePlanner::reports() const {
  absl::MutexLock lock(&mutex_);
  return reports_;
}

std::vector<v1::ReleaseTrialRequest> FakePlanner::releases() const {
  absl::MutexLock lock(&mutex_);
  return releases_;
}

int64_t FakePlanner::registrations(const std::string& agent_id) const {
  absl::MutexLock lock(&mutex_);
  auto it = registrations_.find(agent_id);
  return it == registrations_.end() ? 0 : it->second;
}

std::vector<v1::Probe> FakePlanner::probes(const std::string& agent_id) const {
  absl::MutexLock lock(&mutex_);
  auto it = probes_.find(agent_id);
  return it == probes_.end() ? std::vector<v1::Probe>{} : it->second;
}

std::vector<std::vector<int64_t>> FakePlanner::heartbeats(
    const std::string& agent_id) const {
  absl::MutexLock lock(&mutex_);
  auto it = heartbeats_.find(agent_id);
  return it == heartbeats_.end() ? std::vector<std::vector<int64_t>>{}
                                 : it->second;
}

std::optional<v1::AgentInfo> FakePlanner::agent(
    const std::string& agent_id) const {
  absl::MutexLock lock(&mutex_);
  auto it = agents_.find(agent_id);
  if (it == agents_.end()) return std::nullopt;
  return it->second;
}

bool FakePlanner::WaitFor(const std::function<bool()>& condition,
                          absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > until) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

grpc::Status FakePlanner::KnownAgent(const std::string& agent_id) const {
  if (agents_.count(agent_id) > 0) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("agent '", agent_id, "' is not registered"));
}

bool FakePlanner::Holds(int64_t trial_id, const std::string& agent_id) const {
  auto it = holders_.find(trial_id);
  return it != holders_.end() && it->second.count(agent_id) > 0;
}

grpc::Status FakePlanner::Register(grpc::ServerContext*,
                                   const v1::RegisterRequest* request,
                                   v1::RegisterResponse* response) {
  absl::MutexLock lock(&mutex_);
  const std::string& id = request->agent().agent_id();
  agents_[id] = request->agent();
  ++registrations_[id];
  response->set_heartbeat_interval_ms(heartbeat_ms_);
  response->set_lease_poll_interval_ms(lease_poll_ms_);
  response->set_agent_id(id);
  return grpc::Status::OK;
}

grpc::Status FakePlanner::Heartbeat(grpc::ServerContext*,
                                    const v1::HeartbeatRequest* request,
                                    v1::HeartbeatResponse* response) {
  absl::MutexLock lock(&mutex_);
  if (grpc::Status s = KnownAgent(request->agent_id()); !s.ok()) return s;
  heartbeats_[request->agent_id()].emplace_back(
      request->running_trials().begin(), request->running_trials().end());
  for (int64_t id : cancels_[request->agent_id()]) {
    response->add_cancel_trials(id);
  }
  cancels_.erase(request->agent_id());
  return grpc::Status::OK;
}

grpc::Status FakePlanner::ReportProbes(grpc::ServerContext*,
                                       const v1::ReportProbesRequest* request,
                                       v1::ReportProbesResponse*) {
  absl::MutexLock lock(&mutex_);
  if (grpc::Status s = KnownAgent(request->agent_id()); !s.ok()) return s;
  probes_[request->agent_id()].assign(request->probes().begin(),
                                      request->probes().end());
  return grpc::Status::OK;
}

grpc::Status FakePlanner::LeaseTrial(grpc::ServerContext*,
                                     const v1::LeaseTrialRequest* request,
                                     v1::LeaseTrialResponse* response) {
  absl::MutexLock lock(&mutex_);
  if (grpc::Status s = KnownAgent(request->agent_id()); !s.ok()) return s;
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (std::find(it->agents.begin(), it->agents.end(), request->agent_id()) ==
        it->agents.end()) {
      continue;
    }
    *response->mutable_assignment() = it->assignment;
    queue_.erase(it);
    break;
  }
  return grpc::Status::OK;
}

grpc::Status FakePlanner::ReportTrial(grpc::ServerContext*,
                                      const v1::ReportTrialRequest* request,
                                      v1::ReportTrialResponse*) {
  absl::MutexLock lock(&mutex_);
  ++report_attempts_;
  if (fail_reports_ != grpc::StatusCode::OK) {
    return grpc::Status(fail_reports_, "reports are failing (test)");
  }
  if (reported_.count(request->trial_id()) > 0) {
    return grpc::Status(grpc::StatusCode::ALREADY_EXISTS, "already reported");
  }
  if (!Holds(request->trial_id(), request->agent_id())) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "the agent does not hold the lease");
  }
  reported_.insert(request->trial_id());
  reports_.push_back(
      Report{request->agent_id(), request->trial_id(), request->result_json()});
  return grpc::Status::OK;
}

grpc::Status FakePlanner::ReleaseTrial(grpc::ServerContext*,
                                       const v1::ReleaseTrialRequest* request,
                                       v1::ReleaseTrialResponse*) {
  absl::MutexLock lock(&mutex_);
  if (!Holds(request->trial_id(), request->agent_id())) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "the agent does not hold the lease");
  }
  releases_.push_back(*request);
  holders_.erase(request->trial_id());
  return grpc::Status::OK;
}

grpc::Status FakePlanner::Rendezvous(grpc::ServerContext*,
                                     const v1::RendezvousRequest* request,
                                     v1::RendezvousResponse* response) {
  absl::MutexLock lock(&mutex_);
  // A cluster probe's lease is held as minus its id (see Hold).
  const int64_t trial = request->collective_probe_id() > 0
                            ? -request->collective_probe_id()
                            : request->trial_id();
  if (!Holds(trial, request->agent_id())) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "the agent does not hold the lease");
  }
  if (!request->data().empty()) {
    rendezvous_[trial] = request->data();
    return grpc::Status::OK;
  }
  auto published = [&]() ABSL_SHARED_LOCKS_REQUIRED(mutex_) {
    return rendezvous_.count(trial) > 0;
  };
  mutex_.AwaitWithTimeout(absl::Condition(&published),
                          absl::Milliseconds(request->wait_ms()));
  if (!published()) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        "nothing published yet");
  }
  response->set_data(rendezvous_[trial]);
  return grpc::Status::OK;
}

}  // namespace tessera::agents::testing
