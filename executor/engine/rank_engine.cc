#include "executor/engine/rank_engine.h"

#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tessera::executor {

absl::Status CheckEngineConfig(const EngineConfig& c, int world_size) {
  TESSERA_RETURN_IF_ERROR(ValidateModel(c.model));
  if (c.model.mlp != MlpKind::kSwiGlu) {
    return absl::InvalidArgumentError(
        "model.mlp: the executor trains Llama models (swiglu), not gelu");
  }
  if (c.model.tie_embeddings) {
    return absl::InvalidArgumentError(
        "model.tie_embeddings: the executor trains untied Llama models");
  }
  if (c.seq_len <= 0) {
    return absl::InvalidArgumentError("training.seq_len: must be positive");
  }
  if (c.data == nullptr) {
    return absl::InvalidArgumentError("data: no token source");
  }
  if (!std::isfinite(c.max_grad_norm) || c.max_grad_norm < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("training.max_grad_norm: must be finite and not "
                     "negative (0: no clipping), got ",
                     c.max_grad_norm));
  }
  TESSERA_ASSIGN_OR_RETURN(Layout resolved,
                           ResolveLayout(c.layout, world_size, c.global_batch));
  if (!(resolved == c.layout)) {
    return absl::InvalidArgumentError(
        absl::StrCat("layout: not resolved for ", world_size, " ranks and ",
                     c.global_batch, " sequences: ", FormatLayout(c.layout)));
  }
  return CheckLayoutFitsModel(c.layout, c.model, c.seq_len);
}

RankEngine::RankEngine(const EngineConfig& config, Backend& backend)
    : config_(config), backend_(backend) {}

absl::StatusOr<std::unique_ptr<RankEngine>> RankEngine::Create(
    const EngineConfig& config, Backend& backend, Communicator& world) {
  TESSERA_RETURN_IF_ERROR(CheckEngineConfig(config, world.size()));
  std::unique_ptr<RankEngine> engine(new RankEngine(config, backend));
  TESSERA_RETURN_IF_ERROR(engine->Init(world));
  return engine;
}

absl::Status RankEngine::Init(Communicator& world) {
  const Layout& l = config_.layout;
  timed_world_ = std::make_unique<TimedCommunicator>(&world, &comm_stats_);
  TESSERA_ASSIGN_OR_RETURN(groups_, ParallelGroups::Create(*timed_world_, l));
  shard_ = BuildModelShard(config_.model, l, groups_.coords);
  TESSERA_ASSIGN_OR_RETURN(
      params_, ParamStore::Create(backend_, groups_, l, shard_, config_.seed));
  ctx_.backend = &backend_;
  ctx_.groups = &groups_;
  ctx_.model = &config_.model;
  ctx_.layout = &config_.layout;
  ctx_.seq_len = config_.seq_len;
  ctx_.seq_local = config_.seq_len / l.cp;
  ctx_.tokens = l.micro_batch * ctx_.seq_local;
  ctx_.rows = l.sp ? ctx_.tokens / l.tp : ctx_.tokens;
  TESSERA_RETURN_IF_ERROR(InitPositions(ctx_, l.micro_batch));
  schedule_ = BuildSchedule(static_cast<int>(l.pp), static_cast<int>(l.vpp),
                            groups_.coords.pp, static_cast<int>(l.grad_accum));
  return absl::OkStatus();
}

absl::StatusOr<DeviceBuffer> RankEngine::Tokens(int micro_batch, bool targets) {
  const Layout& l = config_.layout;
  const int64_t s = config_.seq_len;
  const std::vector<int32_t> positions =
      ContextParallelPositions(s, l.cp, groups_.coords.cp);
  // Samples of this dp rank: a contiguous block of the step's global batch.
  const int64_t first = step_ * config_.global_batch +
                        groups_.coords.dp * l.grad_accum * l.micro_batch +
                        micro_batch * l.micro_batch;
  std::vector<int32_t> sample(s + 1), host;
  host.reserve(ctx_.tokens);
  for (int64_t b = 0; b < l.micro_batch; ++b) {
    config_.data->Sample(first + b, s + 1, sample.data());
    for (int32_t p : positions) host.push_back(sample[p + (targets ? 1 : 0)]);
  }
  TESSERA_ASSIGN_OR_RETURN(DeviceBuffer buf,
                           backend_.Allocate(ctx_.tokens, DType::kI32,
                                             targets ? "targets" : "tokens"));
  backend_.CopyFromHost(host.data(), buf.view());
  return buf;
}

absl::Status RankEngine::Forward(const PipelineOp& op, double* loss_sum) {
  const ModelChunk& chunk = shard_.chunks[op.chunk];
  MicroBatchState& st = in_flight_[{op.chunk, op.micro_batch}];
  const int64_t row_elems = ctx_.rows * ctx_.hidden();
  const DType act = backend_.compute_dtype();
  TESSERA_ASSIGN_OR_RETURN(DeviceBuffer x,
                           backend_.Allocate(row_elems, act, "chunk input"));
  const std::vector<int>& units = chunk.units;
  size_t i = 0;
  if (chunk.has_embedding) {
    TESSERA_ASSIGN_OR_RETURN(st.tokens, Tokens(op.micro_batch, false));
    TESSERA_ASSIGN_OR_RETURN(Tensor w, params_->Acquire(units[0]));
    if (units.size() > 1) TESSERA_RETURN_IF_ERROR(params_->Prefetch(units[1]));
    TESSERA_RETURN_IF_ERROR(
        EmbeddingForward(ctx_, w, st.tokens.view(), x.view()));
    params_->Release(units[0]);
    i = 1;
  } else {
    const int prev =
        (groups_.coords.pp + groups_.pp->size() - 1) % groups_.pp->size();
    TESSERA_RETURN_IF_ERROR(groups_.pp->Recv(x.view(), prev));
  }
  st.residuals.push_back(std::move(x));
  for (; i < units.size(); ++i) {
    const ParamUnit& unit = shard_.units[units[i]];
    TESSERA_ASSIGN_OR_RETURN(Tensor w, params_->Acquire(units[i]));
    if (i + 1 < units.size()) {
      TESSERA_RETURN_IF_ERROR(params_->Prefetch(units[i + 1]));
    }
    const Tensor input = st.residuals.back().view();
    if (unit.kind == UnitKind::kOutput) {
      TESSERA_ASSIGN_OR_RETURN(st.targets, Tokens(op.micro_batch, true));
      const float grad_scale = static_cast<float>(
          1.0 / (static_cast<double>(config_.global_batch) * config_.seq_len));
      TESSERA_ASSIGN_OR_RETURN(double sum,
                               OutputForward(ctx_, w, input, st.targets.view(),
                                             grad_scale, &st.head));
      if (groups_.coords.tp == 0) *loss_sum += sum;
    } else {
      TESSERA_ASSIGN_OR_RETURN(
          DeviceBuffer out, backend_.Allocate(row_elems, act, "layer output"));
      st.layers.emplace_back();
      TESSERA_RETURN_IF_ERROR(LayerForward(ctx_, w, LayerUnitOffsets(unit),
                                           input, out.view(),
                                           &st.layers.back()));
      st.residuals.push_back(std::move(out));
    }
    params_->Release(units[i]);
  }
  if (!chunk.has_output) {
    const int next = (groups_.coords.pp + 1) % groups_.pp->size();
    TESSERA_RETURN_IF_ERROR(groups_.pp->Send(st.residuals.back().view(), next));
  }
  return absl::OkStatus();
}

absl::Status RankEngine::Backward(const PipelineOp& op) {
  const ModelChunk& chunk = shard_.chunks[op.chunk];
  MicroBatchState& st = in_flight_[{op.chunk, op.micro_batch}];
  const int pp = groups_.pp_backward->size();
  TESSERA_ASSIGN_OR_RETURN(
      DeviceBuffer d,
      backend_.Allocate(ctx_.rows * ctx_.hidden(), backend_.compute_dtype(),
                        "chunk grad"));
  if (!chunk.has_output) {
    TESSERA_RETURN_IF_ERROR(
        groups_.pp_backward->Recv(d.view(), (groups_.coords.pp + 1) % pp));
  }
  const std::vector<int>& units = chunk.units;
  for (int i = static_cast<int>(units.size()) - 1; i >= 0; --i) {
    const int u = units[i];
    const ParamUnit& unit = shard_.units[u];
    TESSERA_ASSIGN_OR_RETURN(Tensor w, params_->Acquire(u));
    if (i > 0) TESSERA_RETURN_IF_ERROR(params_->Prefetch(units[i - 1]));
    TESSERA_ASSIGN_OR_RETURN(Tensor g, params_->BeginBackward(u));
    if (unit.kind == UnitKind::kOutput) {
      TESSERA_RETURN_IF_ERROR(OutputBackward(
          ctx_, w, g, st.residuals.back().view(), &st.head, d.view()));
    } else if (unit.kind == UnitKind::kEmbedding) {
      TESSERA_RETURN_IF_ERROR(
          EmbeddingBackward(ctx_, g, st.tokens.view(), d.view()));
    } else {
      const Tensor input = st.residuals[st.layers.size() - 1].view();
      TESSERA_RETURN_IF_ERROR(LayerBackward(ctx_, w, LayerUnitOffsets(unit), g,
                                            input, &st.layers.back(),
                                            d.view()));
      st.layers.pop_back();
      st.residuals.pop_back();
    }
    TESSERA_RETURN_IF_ERROR(params_->EndBackward(u));
    params_->Release(u);
  }
  if (!chunk.has_embedding) {
    TESSERA_RETURN_IF_ERROR(
        groups_.pp_backward->Send(d.view(), (groups_.coords.pp + pp - 1) % pp));
  }
  in_flight_.erase({op.chunk, op.micro_batch});
  return absl::OkStatus();
}

absl::StatusOr<double> RankEngine::ForwardBackward() {
  double loss_sum = 0;
  for (const PipelineOp& op : schedule_) {
    if (op.forward) {
      TESSERA_RETURN_IF_ERROR(Forward(op, &loss_sum));
    } else {
      TESSERA_RETURN_IF_ERROR(Backward(op));
    }
  }
  // The loss lives on the last stage's tp-rank-0 ranks: sum it everywhere.
  TESSERA_ASSIGN_OR_RETURN(DeviceBuffer loss,
                           backend_.Allocate(1, DType::kF32, "step loss"));
  const float local = static_cast<float>(loss_sum);
  backend_.CopyFromHost(&local, loss.view());
  TESSERA_RETURN_IF_ERROR(
      timed_world_->AllReduce(loss.view(), loss.view(), ReduceOp::kSum));
  float total = 0;
  backend_.CopyToHost(loss.view(), &total);
  return total / (static_cast<double>(config_.global_batch) * config_.seq_len);
}

absl::Status RankEngine::ApplyOptimizer() {
  AdamWConfig adamw = config_.adamw;
  adamw.step = step_ + 1;
  TESSERA_ASSIGN_OR_RETURN(
      last_grad_norm_, params_->ApplyOptimizer(adamw, config_.max_grad_norm));
  ++step_;
  return absl::OkStatus();
}

absl::StatusOr<StepResult> RankEngine::Step() {
  const auto start = std::chrono::steady_clock::now();
  const double comm_before = comm_stats_.seconds;
  StepResult r;
  TESSERA_ASSIGN_OR_RETURN(r.loss, ForwardBackward());
  TESSERA_RETURN_IF_ERROR(ApplyOptimizer());
  backend_.Synchronize();
  r.step_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  r.comm_s = comm_stats_.seconds - comm_before;
  r.grad_norm = last_grad_norm_;
  return r;
}

}  // namespace tessera::executor
