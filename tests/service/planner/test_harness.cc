#include "tests/service/planner/test_harness.h"

#include <cstdlib>
#include <stdlib.h>

#include <chrono>

#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "proto/convert.h"

namespace tessera::service::testing {

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "tessera_planner_XXXXXX")
          .string();
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::File(absl::string_view name) const {
  return (path_ / std::string(name)).string();
}

absl::Time ManualClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

void ManualClock::Advance(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  now_ += d;
}

db::Clock ManualClock::AsClock() const {
  return [this] { return Now(); };
}

PlannerOptions TestOptions(const std::string& db_path,
                           const ManualClock& clock) {
  PlannerOptions o;
  o.db_path = db_path;
  o.heartbeat_interval = absl::Milliseconds(100);
  o.lease_poll_interval = absl::Milliseconds(100);
  o.lease_timeout = absl::Seconds(3);
  o.agent_timeout = absl::Seconds(10);
  o.reaper_period = absl::ZeroDuration();
  o.max_rendezvous_wait = absl::Seconds(5);
  o.clock = clock.AsClock();
  o.log = Log(getenv("TESSERA_TEST_LOG") ? LogLevel::kInfo : LogLevel::kWarning);
  return o;
}

TestServer StartServer(const PlannerOptions& options) {
  TestServer s;
  absl::StatusOr<std::unique_ptr<PlannerServer>> server =
      PlannerServer::Start("127.0.0.1:0", options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return s;
  s.server = *std::move(server);
  s.channel = grpc::CreateChannel(s.server->address(),
                                  grpc::InsecureChannelCredentials());
  s.planner = v1::PlannerService::NewStub(s.channel);
  return s;
}

v1::StudySpec TinySpec(int64_t nodes, int64_t gpus_per_node) {
  v1::StudySpec spec;
  spec.set_name("tiny-test");
  spec.mutable_model()->set_preset("tiny");
  spec.mutable_cluster()->mutable_gpu()->set_preset("h100-sxm");
  spec.mutable_cluster()->set_nodes(nodes);
  spec.mutable_cluster()->set_gpus_per_node(gpus_per_node);
  spec.mutable_training()->set_global_batch(8);
  spec.mutable_training()->set_seq_len(128);
  spec.mutable_training()->set_total_tokens(1e9);
  spec.mutable_trials()->set_backend("cpu");
  spec.mutable_trials()->set_steps(2);
  spec.mutable_trials()->set_warmup_steps(1);
  return spec;
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  return c;
}

ScriptedAgent::ScriptedAgent(TestServer& server, std::string id,
                             std::string backend, int64_t ranks)
    : stub_(v1::AgentService::NewStub(server.channel)),
      planner_(&server.core()),
      id_(std::move(id)),
      backend_(std::move(backend)),
      ranks_(ranks) {}

grpc::Status ScriptedAgent::Register() {
  v1::RegisterRequest r;
  v1::AgentInfo* a = r.mutable_agent();
  a->set_agent_id(id_);
  a->set_hostname(absl::StrCat("host-", id_));
  a->set_backend(backend_);
  a->set_gpu_name(backend_ == "cpu" ? "Test CPU" : "NVIDIA H100 80GB HBM3");
  a->set_gpu_count(ranks_);
  a->set_memory_bytes(int64_t{8} << 30);
  a->set_interconnect("shared-memory");
  a->set_address("127.0.0.1");
  v1::RegisterResponse response;
  return stub_->Register(Context().get(), r, &response);
}

grpc::Status ScriptedAgent::Heartbeat(const std::vector<int64_t>& running,
                                      v1::HeartbeatResponse* response) {
  v1::HeartbeatRequest r;
  r.set_agent_id(id_);
  for (int64_t t : running) r.add_running_trials(t);
  v1::HeartbeatResponse ignored;
  return stub_->Heartbeat(Context().get(), r,
                          response != nullptr ? response : &ignored);
}

grpc::Status ScriptedAgent::ReportProbes(const std::vector<v1::Probe>& probes) {
  v1::ReportProbesRequest r;
  r.set_agent_id(id_);
  for (const v1::Probe& p : probes) *r.add_probes() = p;
  v1::ReportProbesResponse response;
  return stub_->ReportProbes(Context().get(), r, &response);
}

std::optional<v1::TrialAssignment> ScriptedAgent::Lease() {
  v1::LeaseTrialRequest r;
  r.set_agent_id(id_);
  v1::LeaseTrialResponse response;
  const grpc::Status s = stub_->LeaseTrial(Context().get(), r, &response);
  EXPECT_TRUE(s.ok()) << id_ << ": LeaseTrial: " << s.error_message();
  if (!s.ok() || !response.has_assignment()) return std::nullopt;
  return response.assignment();
}

grpc::Status ScriptedAgent::Report(int64_t trial_id,
                                   const std::string& result_json) {
  v1::ReportTrialRequest r;
  r.set_agent_id(id_);
  r.set_trial_id(trial_id);
  r.set_result_json(result_json);
  v1::ReportTrialResponse response;
  const grpc::Status s = stub_->ReportTrial(Context().get(), r, &response);
  planner_->studies().WaitForAdvances();
  return s;
}

grpc::Status ScriptedAgent::Release(int64_t trial_id, const std::string& reason,
                                    bool infrastructure_failure) {
  v1::ReleaseTrialRequest r;
  r.set_agent_id(id_);
  r.set_trial_id(trial_id);
  r.set_reason(reason);
  r.set_infrastructure_failure(infrastructure_failure);
  v1::ReleaseTrialResponse response;
  const grpc::Status s = stub_->ReleaseTrial(Context().get(), r, &response);
  planner_->studies().WaitForAdvances();
  return s;
}

grpc::Status ScriptedAgent::Publish(int64_t trial_id, const std::string& data,
                                    int64_t probe_id) {
  v1::RendezvousRequest r;
  r.set_agent_id(id_);
  r.set_trial_id(trial_id);
  r.set_collective_probe_id(probe_id);
  r.set_data(data);
  v1::RendezvousResponse response;
  return stub_->Rendezvous(Context().get(), r, &response);
}

grpc::Status ScriptedAgent::Fetch(int64_t trial_id, int64_t wait_ms,
                                  std::string* data, int64_t probe_id) {
  v1::RendezvousRequest r;
  r.set_agent_id(id_);
  r.set_trial_id(trial_id);
  r.set_collective_probe_id(probe_id);
  r.set_wait_ms(wait_ms);
  v1::RendezvousResponse response;
  const grpc::Status s = stub_->Rendezvous(Context().get(), r, &response);
  if (data != nullptr) *data = response.data();
  return s;
}

grpc::Status ScriptedAgent::ReportSweep(int64_t probe_id,
                                        const std::string& json) {
  v1::ReportCollectiveProbeRequest r;
  r.set_agent_id(id_);
  r.set_collective_probe_id(probe_id);
  r.set_result_json(json);
  v1::ReportCollectiveProbeResponse response;
  const grpc::Status s =
      stub_->ReportCollectiveProbe(Context().get(), r, &response);
  planner_->studies().WaitForAdvances();
  return s;
}

std::string OkResultJson(const v1::TrialAssignment& a, double step_time_s) {
  TrialResult r;
  r.status = TrialStatus::kOk;
  r.layout = *LayoutFromProto(a.layout());
  r.backend = a.backend();
  r.model = "tiny";
  r.device = "test cpu";
  r.ranks = a.world_size();
  r.global_batch = a.global_batch();
  r.seq_len = a.seq_len();
  r.warmup_steps = a.warmup_steps();
  r.steps = a.steps();
  r.step_time_s = {step_time_s, step_time_s * 0.95, step_time_s * 1.05};
  r.tokens_per_s =
      static_cast<double>(a.global_batch() * a.seq_len()) / step_time_s;
  r.tokens_per_s_per_gpu = r.tokens_per_s / static_cast<double>(a.world_size());
  r.tflops_per_gpu = 0.01;
  r.mfu = 0.1;
  r.peak_tflops = 0.1;
  r.peak_memory_bytes.assign(static_cast<size_t>(a.world_size()), 1 << 20);
  r.compute_s = step_time_s * 0.8;
  r.comm_s = step_time_s * 0.2;
  r.exposed_comm_s = step_time_s * 0.2;
  for (int64_t i = 0; i < a.warmup_steps() + a.steps(); ++i) {
    r.loss.push_back(6.0 - 0.1 * static_cast<double>(i));
    r.step_times_s.push_back(step_time_s);
  }
  return TrialResultToJson(r).dump();
}

std::string FailedResultJson(const v1::TrialAssignment& a,
                             absl::string_view status,
                             absl::string_view reason) {
  TrialResult r;
  r.status = *ParseTrialStatus(status);
  r.reason = std::string(reason);
  r.layout = *LayoutFromProto(a.layout());
  r.backend = a.backend();
  r.ranks = a.world_size();
  return TrialResultToJson(r).dump();
}

v1::GetStudyResponse GetStudy(TestServer& s, int64_t id) {
  v1::GetStudyRequest r;
  r.set_study_id(id);
  v1::GetStudyResponse out;
  const grpc::Status st = s.planner->GetStudy(Context().get(), r, &out);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return out;
}

std::vector<v1::Trial> ListTrials(TestServer& s, int64_t study_id) {
  v1::ListTrialsRequest r;
  r.set_study_id(study_id);
  v1::ListTrialsResponse out;
  const grpc::Status st = s.planner->ListTrials(Context().get(), r, &out);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return {out.trials().begin(), out.trials().end()};
}

int64_t CountStudies(TestServer& s) {
  v1::ListStudiesRequest r;
  r.set_limit(1000);
  v1::ListStudiesResponse out;
  const grpc::Status st = s.planner->ListStudies(Context().get(), r, &out);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return out.studies_size();
}

}  // namespace tessera::service::testing
