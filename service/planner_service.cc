#include "service/planner_service.h"

#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "service/access.h"
#include "service/plan_convert.h"
#include "service/unary.h"
#include "service/watch_reactor.h"
#include "proto/convert.h"
#include "proto/principals.h"

namespace tessera::service {
namespace {

// A WatchStudy stream refused before it starts.
class RefusedWatch final : public grpc::ServerWriteReactor<v1::StudyEvent> {
 public:
  explicit RefusedWatch(const absl::Status& why) { Finish(ToGrpcStatus(why)); }
  void OnDone() override { delete this; }
};

// Whether trials of `backend` run the study's own command on the agents.
bool RunsCommand(const std::string& backend) {
  absl::StatusOr<const TrialBackend*> b = FindTrialBackend(backend);
  return b.ok() && (*b)->launcher == TrialLauncher::kCommand;
}

}  // namespace

Principal PlannerServiceImpl::Caller(
    const grpc::CallbackServerContext* context) const {
  return CallerOf(callers_, *context);
}

absl::Status PlannerServiceImpl::MayUse(
    const grpc::CallbackServerContext* context, absl::string_view rpc) const {
  return MayUsePlannerService(Caller(context), rpc);
}

grpc::ServerUnaryReactor* PlannerServiceImpl::SubmitStudy(
    grpc::CallbackServerContext* context, const v1::SubmitStudyRequest* request,
    v1::SubmitStudyResponse* response) {
  return FinishUnary(
      context, response, [&]() -> absl::StatusOr<v1::SubmitStudyResponse> {
        const Principal caller = Caller(context);
        TESSERA_RETURN_IF_ERROR(MayUsePlannerService(caller, "SubmitStudy"));
        if (RunsCommand(request->spec().trials().backend())) {
          TESSERA_RETURN_IF_ERROR(MaySubmitCommandStudy(caller));
        }
        std::string note;
        absl::StatusOr<int64_t> id = studies_->SubmitStudy(
            request->spec(),
            request->has_calibration() ? &request->calibration() : nullptr,
            &note, caller.name);
        if (!id.ok()) return id.status();
        v1::SubmitStudyResponse out;
        out.set_study_id(*id);
        out.set_agent_note(note);
        return out;
      });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::GetStudy(
    grpc::CallbackServerContext* context, const v1::GetStudyRequest* request,
    v1::GetStudyResponse* response) {
  return FinishUnary(context, response,
                     [&]() -> absl::StatusOr<v1::GetStudyResponse> {
                       TESSERA_RETURN_IF_ERROR(MayUse(context, "GetStudy"));
                       return studies_->queries().GetStudy(request->study_id());
                     });
}

grpc::ServerWriteReactor<v1::StudyEvent>* PlannerServiceImpl::WatchStudy(
    grpc::CallbackServerContext* context,
    const v1::WatchStudyRequest* request) {
  if (absl::Status may = MayUse(context, "WatchStudy"); !may.ok()) {
    return new RefusedWatch(may);
  }
  return WatchReactor::Start(&studies_->events(), request->study_id());
}

grpc::ServerUnaryReactor* PlannerServiceImpl::ListStudies(
    grpc::CallbackServerContext* context, const v1::ListStudiesRequest* request,
    v1::ListStudiesResponse* response) {
  return FinishUnary(context, response,
                     [&]() -> absl::StatusOr<v1::ListStudiesResponse> {
                       TESSERA_RETURN_IF_ERROR(MayUse(context, "ListStudies"));
                       return studies_->queries().ListStudies(*request);
                     });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::ListTrials(
    grpc::CallbackServerContext* context, const v1::ListTrialsRequest* request,
    v1::ListTrialsResponse* response) {
  return FinishUnary(context, response,
                     [&]() -> absl::StatusOr<v1::ListTrialsResponse> {
                       TESSERA_RETURN_IF_ERROR(MayUse(context, "ListTrials"));
                       return studies_->queries().ListTrials(*request);
                     });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::GetRecommendation(
    grpc::CallbackServerContext* context,
    const v1::GetRecommendationRequest* request, v1::Recommendation* response) {
  return FinishUnary(
      context, response, [&]() -> absl::StatusOr<v1::Recommendation> {
        TESSERA_RETURN_IF_ERROR(MayUse(context, "GetRecommendation"));
        return studies_->queries().GetRecommendation(request->study_id());
      });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::CancelStudy(
    grpc::CallbackServerContext* context, const v1::CancelStudyRequest* request,
    v1::CancelStudyResponse* response) {
  return FinishUnary(
      context, response, [&]() -> absl::StatusOr<v1::CancelStudyResponse> {
        TESSERA_RETURN_IF_ERROR(MayUse(context, "CancelStudy"));
        // The owner never changes once submitted: read, check, cancel.
        TESSERA_ASSIGN_OR_RETURN(const std::string owner,
                                 studies_->StudyOwner(request->study_id()));
        TESSERA_RETURN_IF_ERROR(
            MayCancelStudy(Caller(context), request->study_id(), owner));
        absl::StatusOr<v1::StudySummary> s =
            studies_->CancelStudy(request->study_id());
        if (!s.ok()) return s.status();
        v1::CancelStudyResponse out;
        *out.mutable_study() = *std::move(s);
        return out;
      });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Plan(
    grpc::CallbackServerContext* context, const v1::PlanRequest* request,
    v1::PlanResponse* response) {
  if (absl::Status may = MayUse(context, "Plan"); !may.ok()) {
    return FinishUnaryStatus(context, [&] { return may; });
  }
  return FinishUnaryInPool(
      *search_pool_, "Plan and Predict", context, response,
      [this, request]() -> absl::StatusOr<v1::PlanResponse> {
        TESSERA_ASSIGN_OR_RETURN(const StudyPlan plan,
                                 studies_->Plan(request->study()));
        v1::PlanResponse out = PlanResponseFromResult(plan.result);
        *out.mutable_uncertainty() = PlanUncertaintyToProto(plan.uncertainty);
        return out;
      });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Predict(
    grpc::CallbackServerContext* context, const v1::PredictRequest* request,
    v1::PredictResponse* response) {
  if (absl::Status may = MayUse(context, "Predict"); !may.ok()) {
    return FinishUnaryStatus(context, [&] { return may; });
  }
  return FinishUnaryInPool(
      *search_pool_, "Plan and Predict", context, response,
      [this, request]() -> absl::StatusOr<v1::PredictResponse> {
        TESSERA_ASSIGN_OR_RETURN(const Layout layout,
                                 LayoutFromProto(request->layout()));
        TESSERA_ASSIGN_OR_RETURN(const StudyPrediction p,
                                 studies_->Predict(request->study(), layout));
        v1::PredictResponse out;
        *out.mutable_evaluation() = EvaluationToProto(p.evaluation);
        if (p.step_time.has_value()) {
          *out.mutable_step_time_interval() = IntervalToProto(*p.step_time);
        }
        out.set_uncertainty_source(p.uncertainty_source);
        return out;
      });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::ImportCalibration(
    grpc::CallbackServerContext* context,
    const v1::ImportCalibrationRequest* request,
    v1::ImportCalibrationResponse* response) {
  return FinishUnary(context, response,
                     [&]() -> absl::StatusOr<v1::ImportCalibrationResponse> {
                       TESSERA_RETURN_IF_ERROR(MayChangeCalibrations(
                           Caller(context), "ImportCalibration"));
                       return studies_->ImportCalibration(*request);
                     });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::ExportCalibration(
    grpc::CallbackServerContext* context,
    const v1::ExportCalibrationRequest* request,
    v1::ExportCalibrationResponse* response) {
  return FinishUnary(
      context, response,
      [&]() -> absl::StatusOr<v1::ExportCalibrationResponse> {
        TESSERA_RETURN_IF_ERROR(MayUse(context, "ExportCalibration"));
        return studies_->ExportCalibration(*request);
      });
}

}  // namespace tessera::service
