#include "executor/engine/param_store.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/engine/param_init.h"

namespace tessera::executor {

ParamStore::ParamStore(Backend& backend, ParallelGroups& groups,
                       const Layout& layout, const ModelShard& shard)
    : backend_(backend), groups_(groups), layout_(layout), shard_(shard) {}

absl::StatusOr<std::unique_ptr<ParamStore>> ParamStore::Create(
    Backend& backend, ParallelGroups& groups, const Layout& layout,
    const ModelShard& shard, uint64_t seed) {
  std::unique_ptr<ParamStore> store(
      new ParamStore(backend, groups, layout, shard));
  store->units_.resize(shard.units.size());
  for (int u = 0; u < static_cast<int>(shard.units.size()); ++u) {
    TESSERA_RETURN_IF_ERROR(store->InitUnit(u, seed));
  }
  return store;
}

absl::Status ParamStore::InitUnit(int u, uint64_t seed) {
  const ParamUnit& unit = shard_.units[u];
  UnitState& s = units_[u];
  const int64_t shards = layout_.zero == 0 ? 1 : groups_.shard->size();
  s.padded = (unit.numel + shards - 1) / shards * shards;
  const int64_t shard_size = s.padded / shards;
  const int64_t shard_index = layout_.zero == 0 ? 0 : groups_.shard->rank();
  s.shard_begin = shard_index * shard_size;
  s.shard_end = s.shard_begin + shard_size;

  // The unit's full local values on the host, from the global initialiser.
  std::vector<float> host(s.padded, 0.0f);
  for (const ParamSegment& seg : unit.segments) {
    float* out = host.data() + seg.offset;
    if (seg.init_std == 0) {
      std::fill(out, out + seg.numel(), 1.0f);
    } else {
      FillNormalSlice(seed, seg.param_id, seg.init_std, seg.global_cols,
                      seg.row_begin, seg.row_end, seg.col_begin, seg.col_end,
                      out);
    }
  }
  const std::string what = absl::StrCat("unit ", u);
  TESSERA_ASSIGN_OR_RETURN(
      s.master, backend_.Allocate(shard_size, DType::kF32, what + " master"));
  backend_.CopyFromHost(host.data() + s.shard_begin, s.master.view());
  TESSERA_ASSIGN_OR_RETURN(
      s.exp_avg, backend_.Allocate(shard_size, DType::kF32, what + " exp_avg"));
  TESSERA_ASSIGN_OR_RETURN(
      s.exp_avg_sq,
      backend_.Allocate(shard_size, DType::kF32, what + " exp_avg_sq"));
  const DType act = backend_.compute_dtype();
  s.compute_aliases_master = layout_.zero == 0 && act == DType::kF32;
  if (layout_.zero < 3 && !s.compute_aliases_master) {
    TESSERA_ASSIGN_OR_RETURN(
        s.compute, backend_.Allocate(s.padded, act, what + " weights"));
    TESSERA_ASSIGN_OR_RETURN(
        DeviceBuffer staging,
        backend_.Allocate(s.padded, DType::kF32, what + " init staging"));
    backend_.CopyFromHost(host.data(), staging.view());
    backend_.Copy(staging.view(), s.compute.view(), s.padded);
  }
  const int64_t grad_numel = layout_.zero >= 2 ? shard_size : s.padded;
  TESSERA_ASSIGN_OR_RETURN(
      s.grad, backend_.Allocate(grad_numel, DType::kF32, what + " grad"));
  return absl::OkStatus();
}

int64_t ParamStore::padded_numel(int u) const { return units_[u].padded; }
int64_t ParamStore::shard_begin(int u) const { return units_[u].shard_begin; }
int64_t ParamStore::shard_end(int u) const { return units_[u].shard_end; }
Tensor ParamStore::master(int u) const { return units_[u].master.view(); }

Tensor ParamStore::grad_shard(int u) const {
  const UnitState& s = units_[u];
  if (layout_.zero >= 2) return s.grad.view();
  return s.grad.view().Slice(s.shard_begin, s.shard_end - s.shard_begin);
}

absl::Status ParamStore::GatherCompute(int u, const Tensor& full) {
  UnitState& s = units_[u];
  const int64_t shard_size = s.shard_end - s.shard_begin;
  const DType act = backend_.compute_dtype();
  if (act == DType::kF32) {
    return groups_.shard->AllGather(s.master.view(), full);
  }
  TESSERA_ASSIGN_OR_RETURN(
      DeviceBuffer cast, backend_.Allocate(shard_size, act, "gather staging"));
  backend_.Copy(s.master.view(), cast.view(), shard_size);
  return groups_.shard->AllGather(cast.view(), full);
}

absl::Status ParamStore::Prefetch(int u) {
  UnitState& s = units_[u];
  if (layout_.zero < 3 || !s.compute.empty()) return absl::OkStatus();
  TESSERA_ASSIGN_OR_RETURN(
      s.compute, backend_.Allocate(s.padded, backend_.compute_dtype(),
                                   absl::StrCat("unit ", u, " gathered")));
  return GatherCompute(u, s.compute.view());
}

absl::StatusOr<Tensor> ParamStore::Acquire(int u) {
  UnitState& s = units_[u];
  if (s.compute_aliases_master) return s.master.view();
  TESSERA_RETURN_IF_ERROR(Prefetch(u));
  return s.compute.view();
}

void ParamStore::Release(int u) {
  if (layout_.zero == 3) units_[u].compute.Reset();
}

absl::StatusOr<Tensor> ParamStore::BeginBackward(int u) {
  UnitState& s = units_[u];
  if (layout_.zero < 2) return s.grad.view();
  if (s.grad_full.empty()) {
    TESSERA_ASSIGN_OR_RETURN(
        s.grad_full, backend_.Allocate(s.padded, DType::kF32,
                                       absl::StrCat("unit ", u, " grad full")));
  }
  return s.grad_full.view();
}

absl::Status ParamStore::ReduceReplicatedOverTp(int u,
                                                const Tensor& grad_full) {
  if (!layout_.sp) return absl::OkStatus();
  for (const ParamSegment& seg : shard_.units[u].segments) {
    if (!seg.tp_replicated) continue;
    const Tensor part = grad_full.Slice(seg.offset, seg.numel());
    TESSERA_RETURN_IF_ERROR(groups_.tp->AllReduce(part, part, ReduceOp::kSum));
  }
  return absl::OkStatus();
}

absl::Status ParamStore::EndBackward(int u) {
  UnitState& s = units_[u];
  if (layout_.zero < 2) return absl::OkStatus();
  TESSERA_RETURN_IF_ERROR(ReduceReplicatedOverTp(u, s.grad_full.view()));
  const int64_t shard_size = s.shard_end - s.shard_begin;
  TESSERA_ASSIGN_OR_RETURN(
      DeviceBuffer part,
      backend_.Allocate(shard_size, DType::kF32, "grad reduce-scatter"));
  TESSERA_RETURN_IF_ERROR(groups_.shard->ReduceScatter(
      s.grad_full.view(), part.view(), ReduceOp::kSum));
  backend_.Add(s.grad.view(), part.view(), s.grad.view(), shard_size);
  s.grad_full.Reset();
  return absl::OkStatus();
}

void ParamStore::AdamWOnShard(int u, const AdamWConfig& config,
                              const Tensor& grad) {
  UnitState& s = units_[u];
  for (const ParamSegment& seg : shard_.units[u].segments) {
    const int64_t begin = std::max(seg.offset, s.shard_begin);
    const int64_t end = std::min(seg.offset + seg.numel(), s.shard_end);
    if (begin >= end) continue;
    const int64_t local = begin - s.shard_begin, n = end - begin;
    backend_.AdamW(config, seg.decay, s.master.view().Slice(local, n),
                   grad.Slice(local, n), s.exp_avg.view().Slice(local, n),
                   s.exp_avg_sq.view().Slice(local, n), n);
  }
}

absl::StatusOr<Tensor> ParamStore::ReduceGradient(int u) {
  UnitState& s = units_[u];
  const int64_t shard_size = s.shard_end - s.shard_begin;
  if (layout_.zero == 0) {
    TESSERA_RETURN_IF_ERROR(ReduceReplicatedOverTp(u, s.grad.view()));
    TESSERA_RETURN_IF_ERROR(
        groups_.grad->AllReduce(s.grad.view(), s.grad.view(), ReduceOp::kSum));
    return s.grad.view();
  }
  Tensor shard_grad = s.grad.view();
  if (layout_.zero == 1) {
    // Reduce-scattered through a transient buffer into the full gradient's
    // own shard range, which the update then reads.
    TESSERA_RETURN_IF_ERROR(ReduceReplicatedOverTp(u, s.grad.view()));
    TESSERA_ASSIGN_OR_RETURN(
        DeviceBuffer reduced,
        backend_.Allocate(shard_size, DType::kF32, "grad shard"));
    TESSERA_RETURN_IF_ERROR(groups_.shard->ReduceScatter(
        s.grad.view(), reduced.view(), ReduceOp::kSum));
    shard_grad = s.grad.view().Slice(s.shard_begin, shard_size);
    backend_.Copy(reduced.view(), shard_grad, shard_size);
  }
  if (groups_.replica->size() > 1) {
    TESSERA_RETURN_IF_ERROR(
        groups_.replica->AllReduce(shard_grad, shard_grad, ReduceOp::kSum));
  }
  return shard_grad;
}

absl::StatusOr<double> ParamStore::GlobalGradNorm(
    const std::vector<Tensor>& grads) {
  // Each gradient element counts once in the world: a replica group (zero
  // 0: the grad group) holds copies, counted on its rank 0; tp-replicated
  // segments (norm weights) are counted on tp rank 0. Where every segment
  // counts, one pass over the unit's range (its padding is zero) instead of
  // one per segment: each SumSquares waits for its result.
  const Communicator& copies =
      layout_.zero == 0 ? *groups_.grad : *groups_.replica;
  double local = 0;
  if (copies.rank() == 0) {
    for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
      const UnitState& s = units_[u];
      if (groups_.tp->rank() == 0) {
        local += backend_.SumSquares(grads[u], grads[u].numel);
        continue;
      }
      for (const ParamSegment& seg : shard_.units[u].segments) {
        if (seg.tp_replicated && groups_.tp->rank() != 0) continue;
        const int64_t begin = std::max(seg.offset, s.shard_begin);
        const int64_t end = std::min(seg.offset + seg.numel(), s.shard_end);
        if (begin >= end) continue;
        local += backend_.SumSquares(
            grads[u].Slice(begin - s.shard_begin, end - begin), end - begin);
      }
    }
  }
  TESSERA_ASSIGN_OR_RETURN(DeviceBuffer sum,
                           backend_.Allocate(1, DType::kF32, "grad norm"));
  const float local_f = static_cast<float>(local);
  backend_.CopyFromHost(&local_f, sum.view());
  TESSERA_RETURN_IF_ERROR(
      groups_.world->AllReduce(sum.view(), sum.view(), ReduceOp::kSum));
  float total = 0;
  backend_.CopyToHost(sum.view(), &total);
  return std::sqrt(static_cast<double>(total));
}

absl::Status ParamStore::ReduceGradients() {
  if (!reduced_.empty()) return absl::OkStatus();
  std::vector<Tensor> grads(units_.size());
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
    TESSERA_ASSIGN_OR_RETURN(grads[u], ReduceGradient(u));
  }
  reduced_ = std::move(grads);
  return absl::OkStatus();
}

Tensor ParamStore::reduced_grad_shard(int u) const {
  return reduced_.empty() ? Tensor{} : reduced_[u];
}

absl::StatusOr<double> ParamStore::ApplyOptimizer(const AdamWConfig& config,
                                                  double max_grad_norm) {
  TESSERA_RETURN_IF_ERROR(ReduceGradients());
  const std::vector<Tensor> grads = std::move(reduced_);
  reduced_.clear();
  double norm = 0;
  if (max_grad_norm > 0) {
    TESSERA_ASSIGN_OR_RETURN(norm, GlobalGradNorm(grads));
    // PyTorch's clip_grad_norm_: scale by max / (norm + 1e-6) when below 1.
    const double coefficient = max_grad_norm / (norm + 1e-6);
    if (coefficient < 1) {
      for (const Tensor& g : grads) {
        backend_.Scale(g, g.numel, static_cast<float>(coefficient));
      }
    }
  }
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
    UnitState& s = units_[u];
    AdamWOnShard(u, config, grads[u]);
    if (layout_.zero == 0) {
      if (!s.compute_aliases_master) {
        backend_.Copy(s.master.view(), s.compute.view(), s.padded);
      }
    } else if (layout_.zero < 3) {
      TESSERA_RETURN_IF_ERROR(GatherCompute(u, s.compute.view()));
    }
    backend_.Fill(s.grad.view(), s.grad.view().numel, 0.0f);
  }
  return norm;
}

}  // namespace tessera::executor
