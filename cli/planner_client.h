// How the service commands reach the planner (`tessera-planner`): the
// --planner and --timeout flags, and PlannerClient, one gRPC channel whose
// calls return absl::Status values that the commands print as one line.
// Every unary call has a deadline (--timeout, default 30 s); WatchStudy's
// stream has none (a study may run for hours).
//
//   PlannerFlags planner;
//   planner.Register(&flags, kPlannerFlagHelp);
//   TESSERA_RETURN_IF_ERROR(flags.Parse(args));
//   PlannerClient client(planner.Address(), planner.Timeout());
//   absl::StatusOr<v1::Recommendation> r = client.GetRecommendation(42);
//   // no planner: UNAVAILABLE "cannot reach the planner at 127.0.0.1:50051
//   //             (failed to connect to all addresses)"
//   // no study:   NOT_FOUND "study 42: not found"
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/flags.h"
#include "grpcpp/grpcpp.h"
#include "tessera/v1/service.grpc.pb.h"

namespace tessera::cli {

// Where the planner listens when neither --planner nor $TESSERA_PLANNER says.
inline constexpr char kDefaultPlannerAddress[] = "127.0.0.1:50051";
inline constexpr double kDefaultTimeoutS = 30;

// Help of --planner for the commands that always talk to the planner.
inline constexpr char kPlannerFlagHelp[] =
    "the planner (default $TESSERA_PLANNER or 127.0.0.1:50051)";

// The exit status of a `watch` or `submit --wait` whose study ended
// cancelled or failed (see kServiceExitStatusHelp; cli/exit_codes.h has the
// others).

// The exit status section of the service commands' help texts.
inline constexpr absl::string_view kServiceExitStatusHelp =
    "Exit status:\n"
    "  0  success\n"
    "  1  the planner cannot be reached, did not answer within --timeout,\n"
    "     or failed; one line on stderr says which\n"
    "  2  bad input: unknown flag, missing or malformed value, invalid spec\n"
    "     (the planner's INVALID_ARGUMENT), an unknown study (NOT_FOUND);\n"
    "     one line on stderr names the field or the id\n"
    "  4  watch, submit --wait: the study ended cancelled or failed (the\n"
    "     output says why)\n";

// The flags that say where the planner is, how long a call may take and
// how the connection is secured.
struct PlannerFlags {
  std::optional<std::string> planner;  // HOST:PORT
  std::optional<double> timeout_s;
  std::optional<std::string> tls_ca;      // PEM CA certificates
  std::optional<std::string> token_file;  // the bearer token

  // Adds --planner HOST:PORT (with `planner_help`), --timeout SECONDS,
  // --tls-ca FILE and --auth-token-file FILE to `flags` under a "Planner
  // service" section.
  void Register(FlagSet* flags, absl::string_view planner_help);

  // INVALID_ARGUMENT naming the flag for an empty address, a timeout that
  // is not positive, or security files that do not make credentials
  // (proto/transport_security.h); on success the credentials are built.
  // --tls-ca and --auth-token-file default to $TESSERA_TLS_CA and
  // $TESSERA_AUTH_TOKEN_FILE when set and not empty.
  absl::Status Validate();

  // --planner, else $TESSERA_PLANNER when set and not empty, else
  // kDefaultPlannerAddress.
  std::string Address() const;

  // --timeout, else kDefaultTimeoutS.
  absl::Duration Timeout() const;

  // What Validate built; plaintext before it ran.
  std::shared_ptr<grpc::ChannelCredentials> Credentials() const;

 private:
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
};

// The arguments of a command about one study (`tessera best 7 --json`):
// parses the flags of `args` into `flags` (which holds `planner`'s;
// `switches` as SplitOperands in cli/operands.h), checks `planner`, and
// reads the one operand, the study id. INVALID_ARGUMENT naming the flag or
// the operand (`usage`: "tessera best ID").
absl::StatusOr<int64_t> ParseStudyArgs(const std::vector<std::string>& args,
                                       const std::vector<std::string>& switches,
                                       absl::string_view usage, FlagSet& flags,
                                       PlannerFlags& planner);
// The same with `validate` checking the parsed flags (cli/study_source.h
// passes its own).
absl::StatusOr<int64_t> ParseStudyArgs(
    const std::vector<std::string>& args,
    const std::vector<std::string>& switches, absl::string_view usage,
    FlagSet& flags, const std::function<absl::Status()>& validate);

// The planner's gRPC API with absl::Status errors. A planner that cannot be
// reached is UNAVAILABLE "cannot reach the planner at ADDRESS (why)"; a call
// past its deadline on a working connection is DEADLINE_EXCEEDED "the
// planner at ADDRESS did not answer within N s (--timeout)"; the planner's
// own errors keep their code and message, and a NOT_FOUND for a study is
// prefixed "study N: " when the planner's message does not name it.
class PlannerClient {
 public:
  // Opens a channel to `address` (HOST:PORT) with `credentials` (null:
  // plaintext); connecting happens on the first call. `timeout` bounds each
  // unary call.
  PlannerClient(
      std::string address, absl::Duration timeout,
      std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

  const std::string& address() const { return address_; }

  // The new study's id; `calibration` (null: none) is imported with it.
  // `*agent_note` (when given) gets the planner's note that no registered
  // agent can run the study's trials yet (empty when one can).
  absl::StatusOr<int64_t> SubmitStudy(
      const v1::StudySpec& spec,
      const v1::ImportCalibrationRequest* calibration = nullptr,
      std::string* agent_note = nullptr);
  absl::StatusOr<v1::GetStudyResponse> GetStudy(int64_t study_id);
  absl::StatusOr<v1::ListStudiesResponse> ListStudies(
      const v1::ListStudiesRequest& request);
  absl::StatusOr<v1::ListTrialsResponse> ListTrials(
      const v1::ListTrialsRequest& request);
  absl::StatusOr<v1::Recommendation> GetRecommendation(int64_t study_id);
  absl::StatusOr<v1::CancelStudyResponse> CancelStudy(int64_t study_id);
  absl::StatusOr<v1::PlanResponse> Plan(const v1::PlanRequest& request);
  absl::StatusOr<v1::PredictResponse> Predict(
      const v1::PredictRequest& request);
  absl::StatusOr<v1::ImportCalibrationResponse> ImportCalibration(
      const v1::ImportCalibrationRequest& request);
  absl::StatusOr<v1::ExportCalibrationResponse> ExportCalibration(
      const v1::ExportCalibrationRequest& request);

  // Calls `on_event` with each progress event of the study until the planner
  // ends the stream (after the study's final event, or at once when it is
  // already final): OK then. A broken stream is the error it broke with;
  // `*received` (when given) counts the events delivered either way.
  absl::Status WatchStudy(
      int64_t study_id,
      const std::function<void(const v1::StudyEvent&)>& on_event,
      int64_t* received = nullptr);

 private:
  // `study_id` > 0: the call is about that study (NOT_FOUND names it).
  absl::Status FromGrpc(const grpc::Status& status, int64_t study_id = 0) const;
  void SetDeadline(grpc::ClientContext* context) const;

  std::string address_;
  absl::Duration timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PlannerService::Stub> stub_;
};

}  // namespace tessera::cli
