#include "cli/planner_client.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/operands.h"
#include "core/status_macros.h"
#include "proto/transport_security.h"

namespace tessera::cli {

void PlannerFlags::Register(FlagSet* flags, absl::string_view planner_help) {
  flags->AddSection("Planner service");
  flags->AddString("planner", "HOST:PORT", planner_help, &planner);
  flags->AddDouble("timeout", "SECONDS",
                   absl::StrFormat("how long one call may take (default %g)",
                                   kDefaultTimeoutS),
                   &timeout_s);
  flags->AddString("tls-ca", "FILE",
                   "dial over TLS, the planner's certificate checked against "
                   "these PEM CA certificates (default $TESSERA_TLS_CA)",
                   &tls_ca);
  flags->AddString("auth-token-file", "FILE",
                   "send this file's token on every call; needs --tls-ca "
                   "(default $TESSERA_AUTH_TOKEN_FILE)",
                   &token_file);
}

namespace {

// The flag's value, else the environment variable's when set and not empty,
// else "".
std::string FlagOrEnv(const std::optional<std::string>& flag,
                      const char* variable) {
  if (flag.has_value()) return *flag;
  const char* env = std::getenv(variable);
  return env != nullptr ? env : "";
}

}  // namespace

absl::Status PlannerFlags::Validate() {
  if (timeout_s.has_value() && !(*timeout_s > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeout: must be positive, got ", *timeout_s));
  }
  TESSERA_ASSIGN_OR_RETURN(
      credentials_,
      ChannelCredentialsFromFiles(
          {.ca_file = FlagOrEnv(tls_ca, "TESSERA_TLS_CA"),
           .token_file = FlagOrEnv(token_file, "TESSERA_AUTH_TOKEN_FILE")}));
  return absl::OkStatus();
}

std::shared_ptr<grpc::ChannelCredentials> PlannerFlags::Credentials() const {
  return credentials_ != nullptr ? credentials_
                                 : grpc::InsecureChannelCredentials();
}

std::string PlannerFlags::Address() const {
  if (planner.has_value()) return *planner;
  if (const char* env = std::getenv("TESSERA_PLANNER");
      env != nullptr && *env != '\0') {
    return env;
  }
  return kDefaultPlannerAddress;
}

absl::Duration PlannerFlags::Timeout() const {
  return absl::Seconds(timeout_s.value_or(kDefaultTimeoutS));
}

absl::StatusOr<int64_t> ParseStudyArgs(const std::vector<std::string>& args,
                                       const std::vector<std::string>& switches,
                                       absl::string_view usage, FlagSet& flags,
                                       PlannerFlags& planner) {
  return ParseStudyArgs(args, switches, usage, flags,
                        [&] { return planner.Validate(); });
}

absl::StatusOr<int64_t> ParseStudyArgs(
    const std::vector<std::string>& args,
    const std::vector<std::string>& switches, absl::string_view usage,
    FlagSet& flags, const std::function<absl::Status()>& validate) {
  const Operands operands = SplitOperands(args, switches);
  TESSERA_RETURN_IF_ERROR(flags.Parse(operands.flags));
  TESSERA_RETURN_IF_ERROR(validate());
  TESSERA_RETURN_IF_ERROR(ExpectOperands(operands, {"ID"}, usage));
  return ParseStudyId(operands.operands[0]);
}

PlannerClient::PlannerClient(
    std::string address, absl::Duration timeout,
    std::shared_ptr<grpc::ChannelCredentials> credentials)
    : address_(std::move(address)),
      timeout_(timeout),
      channel_(grpc::CreateChannel(address_,
                                   credentials != nullptr
                                       ? std::move(credentials)
                                       : grpc::InsecureChannelCredentials())),
      stub_(v1::PlannerService::NewStub(channel_)) {}

void PlannerClient::SetDeadline(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(timeout_));
}

absl::Status PlannerClient::FromGrpc(const grpc::Status& status,
                                     int64_t study_id) const {
  if (status.ok()) return absl::OkStatus();
  const std::string& message = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return absl::UnavailableError(absl::StrCat("cannot reach the planner at ",
                                                 address_, " (", message, ")"));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      // A channel that never connected is the planner's absence, not its
      // slowness.
      if (channel_->GetState(/*try_to_connect=*/false) != GRPC_CHANNEL_READY) {
        return absl::UnavailableError(absl::StrCat(
            "cannot reach the planner at ", address_, " (no connection within ",
            absl::FormatDuration(timeout_), ")"));
      }
      return absl::DeadlineExceededError(
          absl::StrCat("the planner at ", address_, " did not answer within ",
                       absl::FormatDuration(timeout_), " (--timeout)"));
    case grpc::StatusCode::NOT_FOUND: {
      const std::string study = absl::StrCat("study ", study_id);
      if (study_id > 0 && !absl::StrContains(message, study)) {
        return absl::NotFoundError(
            absl::StrCat(study, ": ", message.empty() ? "not found" : message));
      }
      return absl::NotFoundError(message);
    }
    default:
      // grpc::StatusCode and absl::StatusCode share their numbers.
      return absl::Status(
          static_cast<absl::StatusCode>(status.error_code()),
          message.empty() ? absl::StrCat("the planner at ", address_, " failed")
                          : message);
  }
}

absl::StatusOr<int64_t> PlannerClient::SubmitStudy(
    const v1::StudySpec& spec, const v1::ImportCalibrationRequest* calibration,
    std::string* agent_note) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::SubmitStudyRequest request;
  *request.mutable_spec() = spec;
  if (calibration != nullptr) *request.mutable_calibration() = *calibration;
  v1::SubmitStudyResponse response;
  const grpc::Status s = stub_->SubmitStudy(&context, request, &response);
  if (!s.ok()) return FromGrpc(s);
  if (agent_note != nullptr) *agent_note = response.agent_note();
  return response.study_id();
}

absl::StatusOr<v1::GetStudyResponse> PlannerClient::GetStudy(int64_t study_id) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetStudyRequest request;
  request.set_study_id(study_id);
  v1::GetStudyResponse response;
  const grpc::Status s = stub_->GetStudy(&context, request, &response);
  if (!s.ok()) return FromGrpc(s, study_id);
  return response;
}

absl::StatusOr<v1::ListStudiesResponse> PlannerClient::ListStudies(
    const v1::ListStudiesRequest& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ListStudiesResponse response;
  const grpc::Status s = stub_->ListStudies(&context, request, &response);
  if (!s.ok()) return FromGrpc(s);
  return response;
}

absl::StatusOr<v1::ListTrialsResponse> PlannerClient::ListTrials(
    const v1::ListTrialsRequest& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ListTrialsResponse response;
  const grpc::Status s = stub_->ListTrials(&context, request, &response);
  if (!s.ok()) return FromGrpc(s, request.study_id());
  return response;
}

absl::StatusOr<v1::Recommendation> PlannerClient::GetRecommendation(
    int64_t study_id) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::GetRecommendationRequest request;
  request.set_study_id(study_id);
  v1::Recommendation response;
  const grpc::Status s = stub_->GetRecommendation(&context, request, &response);
  if (!s.ok()) return FromGrpc(s, study_id);
  return response;
}

absl::StatusOr<v1::CancelStudyResponse> PlannerClient::CancelStudy(
    int64_t study_id) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::CancelStudyRequest request;
  request.set_study_id(study_id);
  v1::CancelStudyResponse response;
  const grpc::Status s = stub_->CancelStudy(&context, request, &response);
  if (!s.ok()) return FromGrpc(s, study_id);
  return response;
}

absl::StatusOr<v1::PlanResponse> PlannerClient::Plan(
    const v1::PlanRequest& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::PlanResponse response;
  const grpc::Status s = stub_->Plan(&context, request, &response);
  if (!s.ok()) return FromGrpc(s);
  return response;
}

absl::StatusOr<v1::PredictResponse> PlannerClient::Predict(
    const v1::PredictRequest& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::PredictResponse response;
  const grpc::Status s = stub_->Predict(&context, request, &response);
  if (!s.ok()) return FromGrpc(s);
  return response;
}

absl::StatusOr<v1::ImportCalibrationResponse> PlannerClient::ImportCalibration(
    const v1::ImportCalibrationRequest& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ImportCalibrationResponse response;
  const grpc::Status s = stub_->ImportCalibration(&context, request, &response);
  if (!s.ok()) return FromGrpc(s);
  return response;
}

absl::StatusOr<v1::ExportCalibrationResponse> PlannerClient::ExportCalibration(
    const v1::ExportCalibrationRequest& request) {
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ExportCalibrationResponse response;
  const grpc::Status s = stub_->ExportCalibration(&context, request, &response);
  if (!s.ok()) return FromGrpc(s);
  return response;
}

absl::Status PlannerClient::WatchStudy(
    int64_t study_id,
    const std::function<void(const v1::StudyEvent&)>& on_event,
    int64_t* received) {
  grpc::ClientContext context;
  v1::WatchStudyRequest request;
  request.set_study_id(study_id);
  std::unique_ptr<grpc::ClientReader<v1::StudyEvent>> reader =
      stub_->WatchStudy(&context, request);
  v1::StudyEvent event;
  int64_t count = 0;
  if (received != nullptr) *received = 0;
  while (reader->Read(&event)) {
    ++count;
    if (received != nullptr) *received = count;
    on_event(event);
  }
  return FromGrpc(reader->Finish(), study_id);
}

}  // namespace tessera::cli
