#include "planner/service/planner_service.h"

#include "planner/service/unary.h"
#include "planner/service/watch_reactor.h"

namespace tessera::service {

grpc::ServerUnaryReactor* PlannerServiceImpl::SubmitStudy(
    grpc::CallbackServerContext* context, const v1::SubmitStudyRequest* request,
    v1::SubmitStudyResponse* response) {
  return FinishUnary(
      context, response, [&]() -> absl::StatusOr<v1::SubmitStudyResponse> {
        std::string note;
        absl::StatusOr<int64_t> id = planner_->SubmitStudy(
            request->spec(),
            request->has_calibration() ? &request->calibration() : nullptr,
            &note);
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
                     [&] { return planner_->GetStudy(request->study_id()); });
}

grpc::ServerWriteReactor<v1::StudyEvent>* PlannerServiceImpl::WatchStudy(
    grpc::CallbackServerContext* context,
    const v1::WatchStudyRequest* request) {
  return WatchReactor::Start(planner_, request->study_id());
}

grpc::ServerUnaryReactor* PlannerServiceImpl::ListStudies(
    grpc::CallbackServerContext* context, const v1::ListStudiesRequest* request,
    v1::ListStudiesResponse* response) {
  return FinishUnary(context, response,
                     [&] { return planner_->ListStudies(*request); });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::ListTrials(
    grpc::CallbackServerContext* context, const v1::ListTrialsRequest* request,
    v1::ListTrialsResponse* response) {
  return FinishUnary(context, response,
                     [&] { return planner_->ListTrials(*request); });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::GetRecommendation(
    grpc::CallbackServerContext* context,
    const v1::GetRecommendationRequest* request, v1::Recommendation* response) {
  return FinishUnary(context, response, [&] {
    return planner_->GetRecommendation(request->study_id());
  });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::CancelStudy(
    grpc::CallbackServerContext* context, const v1::CancelStudyRequest* request,
    v1::CancelStudyResponse* response) {
  return FinishUnary(context, response,
                     [&]() -> absl::StatusOr<v1::CancelStudyResponse> {
                       absl::StatusOr<v1::StudySummary> s =
                           planner_->CancelStudy(request->study_id());
                       if (!s.ok()) return s.status();
                       v1::CancelStudyResponse out;
                       *out.mutable_study() = *std::move(s);
                       return out;
                     });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Plan(
    grpc::CallbackServerContext* context, const v1::PlanRequest* request,
    v1::PlanResponse* response) {
  return FinishUnaryInPool(
      *search_pool_, "Plan and Predict", context, response,
      [this, request] { return planner_->Plan(*request); });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::Predict(
    grpc::CallbackServerContext* context, const v1::PredictRequest* request,
    v1::PredictResponse* response) {
  return FinishUnaryInPool(
      *search_pool_, "Plan and Predict", context, response,
      [this, request] { return planner_->Predict(*request); });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::ImportCalibration(
    grpc::CallbackServerContext* context,
    const v1::ImportCalibrationRequest* request,
    v1::ImportCalibrationResponse* response) {
  return FinishUnary(context, response,
                     [&] { return planner_->ImportCalibration(*request); });
}

grpc::ServerUnaryReactor* PlannerServiceImpl::ExportCalibration(
    grpc::CallbackServerContext* context,
    const v1::ExportCalibrationRequest* request,
    v1::ExportCalibrationResponse* response) {
  return FinishUnary(context, response,
                     [&] { return planner_->ExportCalibration(*request); });
}

}  // namespace tessera::service
