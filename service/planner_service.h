// tessera.v1.PlannerService over the studies (studies.h; callback API): each
// handler checks the caller's role (access.h), translates the request,
// calls the studies and finishes with its status
// (grpc_status.h); WatchStudy streams through a WatchReactor. Plan and
// Predict, the expensive searches, run on the service's own bounded pool
// (background_pool.h): RESOURCE_EXHAUSTED when it is full.
//
//   PlannerServiceImpl service(&planner->studies(), callers.get(),
//                              {.threads = 2});
//   builder.RegisterService(&service);
#pragma once

#include <memory>

#include "service/background_pool.h"
#include "service/studies.h"
#include "proto/principals.h"
#include "tessera/v1/service.grpc.pb.h"

namespace tessera::service {

class PlannerServiceImpl final : public v1::PlannerService::CallbackService {
 public:
  // `studies` must outlive the service.
  // `callers` (null: callers are not told apart) says who each call is
  // (proto/principals.h) for the role checks (access.h).
  PlannerServiceImpl(Studies* studies, const Callers* callers,
                     BackgroundPoolOptions search_pool)
      : studies_(studies),
        callers_(callers),
        search_pool_(std::make_unique<BackgroundPool>(search_pool)) {}

  grpc::ServerUnaryReactor* SubmitStudy(
      grpc::CallbackServerContext* context,
      const v1::SubmitStudyRequest* request,
      v1::SubmitStudyResponse* response) override;
  grpc::ServerUnaryReactor* GetStudy(grpc::CallbackServerContext* context,
                                     const v1::GetStudyRequest* request,
                                     v1::GetStudyResponse* response) override;
  grpc::ServerWriteReactor<v1::StudyEvent>* WatchStudy(
      grpc::CallbackServerContext* context,
      const v1::WatchStudyRequest* request) override;
  grpc::ServerUnaryReactor* ListStudies(
      grpc::CallbackServerContext* context,
      const v1::ListStudiesRequest* request,
      v1::ListStudiesResponse* response) override;
  grpc::ServerUnaryReactor* ListTrials(
      grpc::CallbackServerContext* context,
      const v1::ListTrialsRequest* request,
      v1::ListTrialsResponse* response) override;
  grpc::ServerUnaryReactor* GetRecommendation(
      grpc::CallbackServerContext* context,
      const v1::GetRecommendationRequest* request,
      v1::Recommendation* response) override;
  grpc::ServerUnaryReactor* CancelStudy(
      grpc::CallbackServerContext* context,
      const v1::CancelStudyRequest* request,
      v1::CancelStudyResponse* response) override;
  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* context,
                                 const v1::PlanRequest* request,
                                 v1::PlanResponse* response) override;
  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context,
                                    const v1::PredictRequest* request,
                                    v1::PredictResponse* response) override;
  grpc::ServerUnaryReactor* ImportCalibration(
      grpc::CallbackServerContext* context,
      const v1::ImportCalibrationRequest* request,
      v1::ImportCalibrationResponse* response) override;
  grpc::ServerUnaryReactor* ExportCalibration(
      grpc::CallbackServerContext* context,
      const v1::ExportCalibrationRequest* request,
      v1::ExportCalibrationResponse* response) override;

 private:
  Principal Caller(const grpc::CallbackServerContext* context) const;
  // OK when the call's principal may call `rpc` (access.h).
  absl::Status MayUse(const grpc::CallbackServerContext* context,
                      absl::string_view rpc) const;

  Studies* const studies_;
  const Callers* const callers_;
  // Plan and Predict. Destroyed (its accepted calls answered) after the
  // server that owns the service has shut down.
  std::unique_ptr<BackgroundPool> search_pool_;
};

}  // namespace tessera::service
