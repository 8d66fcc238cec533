#include "costmodel/search/search.h"

#include <algorithm>
#include <chrono>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "costmodel/memory/memory_model.h"
#include "costmodel/search/pareto.h"
#include "costmodel/stacks/training_stack.h"
#include "costmodel/step_model.h"

namespace tessera::costmodel {
namespace {

// The search space (docs/architecture.md, "A layout"), cut to what the training stack
// runs (costmodel/stacks):
//   tp      divisors of the world up to the number of heads (within a node
//           and beyond); 1 without tensor parallelism;
//   sp      off and on when tp > 1, as the stack allows;
//   pp      divisors of world / tp up to the number of layers; 1 without
//           pipeline parallelism;
//   vpp     1, and when pp > 1 and the stack interleaves, every v > 1 with
//           pp*v dividing the layers, and (stacks that size chunks apart)
//           every v with pp*v <= layers whose chunks are equal but for at
//           most the first and the last, one layer short (Llama 3's split);
//   cp      divisors of world / (tp*pp) with 2*cp <= seq_len; 1 without
//           context parallelism;
//   dp      world / (tp*pp*cp);
//   micro_batch  divisors of the global batch;
//   zero    the stack's stages (with pp > 1 at most its pipeline limit);
//           shard_group 1 for zero 0, every divisor of dp otherwise (only dp
//           without HSDP);
//   recompute    the stack's modes.
// Each layout is checked with core's rules in core's order (ResolveLayout,
// then CheckLayoutFitsModel), rejected with the first failing rule's field,
// then costed; the memory check comes first.

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

// A costed feasible layout, kept compact until the end.
struct Scored {
  double tokens_per_s = 0;
  double tokens_per_joule = 0;
  int64_t order = 0;  // enumeration order, for stable ties
  Layout layout;
};

// True when a ranks before b: more tokens/s, then enumerated first. As the
// priority queue's comparator it keeps the worst kept candidate on top.
struct RanksBefore {
  bool operator()(const Scored& a, const Scored& b) const {
    if (a.tokens_per_s != b.tokens_per_s)
      return a.tokens_per_s > b.tokens_per_s;
    return a.order < b.order;
  }
};

// Rejection reasons, named by the field of the rule that fails.
enum RejectKind { kMicroBatch, kVpp, kTp, kCp, kSp, kMemory, kKinds };
constexpr const char* kKindNames[kKinds] = {"layout.micro_batch", "layout.vpp",
                                            "layout.tp",          "layout.cp",
                                            "layout.sp",          "memory"};

bool DividesModel(int64_t tp, const ModelConfig& m) {
  return m.heads % tp == 0 && m.kv_heads % tp == 0 && m.ffn_hidden % tp == 0 &&
         m.vocab % tp == 0;
}

// The interleaving degrees the stack runs with `pp` stages of `layers`.
std::vector<int64_t> VirtualStages(const StackLayouts& s, int64_t layers,
                                   int64_t pp) {
  std::vector<int64_t> vpps = {1};
  if (pp <= 1 || !s.interleaved_pipeline) return vpps;
  for (int64_t v = 2; pp * v <= layers; ++v) {
    const int64_t chunks = pp * v;
    const int64_t short_chunks = (layers + chunks - 1) / chunks * chunks - layers;
    if (short_chunks == 0 || (s.uneven_interleaving && short_chunks <= 2)) {
      vpps.push_back(v);
    }
  }
  return vpps;
}

class Searcher {
 public:
  Searcher(const ResolvedWorkload& r, const Calibration& c,
           const SearchOptions& o)
      : r_(r),
        w_(r.workload),
        stack_(r.stack),
        c_(c),
        o_(o),
        world_(w_.cluster.world_size()) {
    for (int64_t z : stack_.layouts.zero_stages) {
      zeros_[0].push_back(z);
      if (z <= stack_.layouts.max_zero_with_pipeline) zeros_[1].push_back(z);
    }
  }

  void Run(SearchResult* r);
  // Whether any enumerated layout reached the global batch exactly.
  bool any_batch_reachable() const { return batch_reachable_ > 0; }

 private:
  // Enumerates micro_batch, recompute, zero and shard_group for one
  // (tp, sp, pp, vpp, cp).
  void EnumerateInner(const Layout& outer, RejectKind model_rule,
                      SearchResult* r);
  void Keep(const Layout& l, const Prediction& p);
  // Layouts EnumerateInner enumerates per micro-batch for `pp` stages and
  // `dp` replicas: recompute modes x (zero 0 + zero 1..3 x shard groups).
  int64_t InnerLayoutCount(int64_t pp, int64_t dp);
  // Divisors(n), computed once per n: the loops ask for the divisors of the
  // same few numbers (world / tp, world / (tp*pp), dp, global batch / dp)
  // thousands of times.
  const std::vector<int64_t>& DivisorsOf(int64_t n);

  const ResolvedWorkload& r_;
  const Workload& w_;  // r_'s
  const TrainingStack& stack_;  // r_'s
  const Calibration& c_;
  const SearchOptions& o_;
  const int64_t world_;
  int64_t batch_reachable_ = 0;
  int64_t rejected_[kKinds] = {};
  int64_t order_ = 0;
  std::vector<int64_t> batch_divisors_;
  // The ZeRO stages the stack runs without ([0]) and with ([1]) a pipeline.
  std::vector<int64_t> zeros_[2];
  // Run's context-parallel degrees for one (tp, pp), reused.
  std::vector<int64_t> cps_;
  // The one shard group of a stack without HSDP: all dp replicas.
  std::vector<int64_t> full_shard_ = {0};
  // Node-based: the references DivisorsOf returns outlive later inserts.
  std::unordered_map<int64_t, std::vector<int64_t>> divisors_;
  std::priority_queue<Scored, std::vector<Scored>, RanksBefore> top_;
  std::vector<Scored> all_;  // every feasible layout when options.top == 0
  Scored best_energy_;
  bool have_best_energy_ = false;
  ParetoFront front_;
  std::vector<Layout> front_layouts_;  // by ParetoPoint::id
};

void Searcher::Keep(const Layout& l, const Prediction& p) {
  Scored s{p.tokens_per_s, p.tokens_per_joule, order_++, l};
  if (o_.top == 0) {
    all_.push_back(s);
  } else if (static_cast<int64_t>(top_.size()) < o_.top) {
    top_.push(s);
  } else if (RanksBefore()(s, top_.top())) {
    top_.pop();
    top_.push(s);
  }
  if (!have_best_energy_ ||
      s.tokens_per_joule > best_energy_.tokens_per_joule) {
    best_energy_ = s;
    have_best_energy_ = true;
  }
  if (front_.Offer(s.tokens_per_s, s.tokens_per_joule,
                   static_cast<int64_t>(front_layouts_.size()))) {
    front_layouts_.push_back(l);
  }
}

const std::vector<int64_t>& Searcher::DivisorsOf(int64_t n) {
  auto [it, inserted] = divisors_.try_emplace(n);
  if (inserted) it->second = Divisors(n);
  return it->second;
}

int64_t Searcher::InnerLayoutCount(int64_t pp, int64_t dp) {
  const StackLayouts& s = stack_.layouts;
  const int64_t shard_group_count =
      s.hsdp ? static_cast<int64_t>(DivisorsOf(dp).size()) : 1;
  int64_t per_recompute = 0;
  for (int64_t z : zeros_[pp == 1 ? 0 : 1]) {
    per_recompute += z == 0 ? 1 : shard_group_count;
  }
  return static_cast<int64_t>(s.recompute.size()) * per_recompute;
}

// `model_rule`: the first of CheckLayoutFitsModel's rules that fails, kKinds
// when none does. The global batch divides into outer.dp replicas (Run
// counts the layouts whose dp does not divide it).
void Searcher::EnumerateInner(const Layout& outer, RejectKind model_rule,
                              SearchResult* r) {
  const int64_t gb = w_.training.global_batch;
  const int64_t dp = outer.dp;
  const StackLayouts& s = stack_.layouts;
  const int64_t inner = InnerLayoutCount(outer.pp, dp);
  if (inner == 0) return;
  full_shard_[0] = dp;
  const std::vector<int64_t>& shard_groups =
      s.hsdp ? DivisorsOf(dp) : full_shard_;
  const std::vector<int64_t>& zeros = zeros_[outer.pp == 1 ? 0 : 1];
  // Of the global batch's divisors, the micro-batches that reach it on dp
  // replicas are the divisors of q = gb / dp (dp divides gb: Run); with
  // interleaving, those whose q / mb micro-batches per step are a multiple
  // of pp, the divisors of q / pp. Each list is a subsequence of the one
  // before in the same ascending order, so the layouts are enumerated as
  // one loop over the global batch's divisors would; the others fail on
  // the micro-batch or the vpp, counted at once.
  const int64_t q = gb / dp;
  const std::vector<int64_t>& micro_batches = DivisorsOf(q);
  static const std::vector<int64_t> kNone;
  const std::vector<int64_t>* interleavable = &kNone;
  if (outer.vpp == 1) {
    interleavable = &micro_batches;
  } else if (q % outer.pp == 0) {
    interleavable = &DivisorsOf(q / outer.pp);
  }
  const std::vector<int64_t>& runnable = *interleavable;
  const int64_t all = static_cast<int64_t>(batch_divisors_.size());
  const int64_t reachable = static_cast<int64_t>(micro_batches.size());
  const int64_t runs = static_cast<int64_t>(runnable.size());
  r->searched += inner * all;
  rejected_[kMicroBatch] += inner * (all - reachable);
  batch_reachable_ += inner * reachable;
  rejected_[kVpp] += inner * (reachable - runs);
  if (model_rule != kKinds) {
    rejected_[model_rule] += inner * runs;
    return;
  }
  for (int64_t mb : runnable) {
    const int64_t grad_accum = q / mb;
    Layout l = outer;
    l.micro_batch = mb;
    l.grad_accum = grad_accum;
    Prediction p;
    for (Recompute recompute : s.recompute) {
      l.recompute = recompute;
      // Per-layer memory and costs do not depend on the ZeRO stage.
      LayerStep layer = LayerStepOf(w_, stack_, l, c_);
      for (int64_t zero : zeros) {
        l.zero = zero;
        const size_t groups = zero == 0 ? 1 : shard_groups.size();
        for (size_t g = 0; g < groups; ++g) {
          l.shard_group = zero == 0 ? 1 : shard_groups[g];
          ++r->scored;
          if (!PredictStep(w_, stack_, l, c_, &layer,
                           /*stop_if_over_memory=*/true, &p)) {
            ++rejected_[kMemory];
            continue;
          }
          ++r->feasible;
          Keep(l, p);
        }
      }
    }
  }
}

void Searcher::Run(SearchResult* r) {
  const ModelConfig& m = w_.model;
  const StackLayouts& s = stack_.layouts;
  const int64_t seq = w_.training.seq_len;
  batch_divisors_ = Divisors(w_.training.global_batch);
  for (int64_t tp : DivisorsOf(world_)) {
    if (tp > m.heads || (tp > 1 && !s.tensor_parallel)) break;
    const bool tp_ok = DividesModel(tp, m);
    const int sp_min =
        tp > 1 && s.sequence_parallel == SequenceParallel::kAlways ? 1 : 0;
    const int sp_max =
        tp > 1 && s.sequence_parallel != SequenceParallel::kNever ? 1 : 0;
    for (int sp = sp_min; sp <= sp_max; ++sp) {
      for (int64_t pp : DivisorsOf(world_ / tp)) {
        if (pp > m.layers || (pp > 1 && !s.pipeline_parallel)) break;
        // The cp degrees enumerated; where dp = world / (tp*pp*cp) does not
        // divide the global batch, it divides no global batch / micro_batch
        // either: those layouts fail on the micro-batch at every vpp and are
        // counted here at once (most layouts of an odd node count).
        std::vector<int64_t>& cps = cps_;
        cps.clear();
        int64_t unreachable = 0;  // such layouts per vpp
        for (int64_t cp : DivisorsOf(world_ / (tp * pp))) {
          if (cp > 1 && (2 * cp > seq || !s.context_parallel)) break;
          const int64_t dp = world_ / (tp * pp * cp);
          if (w_.training.global_batch % dp == 0) {
            cps.push_back(cp);
          } else {
            unreachable += InnerLayoutCount(pp, dp) *
                           static_cast<int64_t>(batch_divisors_.size());
          }
        }
        const std::vector<int64_t> vpps = VirtualStages(s, m.layers, pp);
        r->searched += unreachable * static_cast<int64_t>(vpps.size());
        rejected_[kMicroBatch] += unreachable * static_cast<int64_t>(vpps.size());
        for (int64_t vpp : vpps) {
          for (int64_t cp : cps) {
            Layout l;
            l.tp = tp;
            l.sp = sp == 1;
            l.pp = pp;
            l.vpp = vpp;
            l.cp = cp;
            l.dp = world_ / (tp * pp * cp);
            // CheckLayoutFitsModel's order: tp, (pp, vpp hold by
            // construction), cp, sp.
            const bool cp_ok = cp == 1 || seq % (2 * cp) == 0;
            const bool sp_ok = !l.sp || (seq % cp == 0 && (seq / cp) % tp == 0);
            const RejectKind rule = !tp_ok   ? kTp
                                    : !cp_ok ? kCp
                                    : !sp_ok ? kSp
                                             : kKinds;
            EnumerateInner(l, rule, r);
          }
        }
      }
    }
  }

  for (int k = 0; k < kKinds; ++k) {
    if (rejected_[k] > 0) r->rejected[kKindNames[k]] = rejected_[k];
  }
  std::vector<Scored> ranked = std::move(all_);
  while (!top_.empty()) {
    ranked.push_back(top_.top());
    top_.pop();
  }
  std::sort(ranked.begin(), ranked.end(), [](const Scored& a, const Scored& b) {
    return RanksBefore()(a, b);
  });
  for (const Scored& scored : ranked) {
    r->candidates.push_back(PredictLayout(r_, scored.layout, c_));
  }
  if (!r->candidates.empty()) r->best_throughput = r->candidates.front();
  if (have_best_energy_) {
    r->best_energy = PredictLayout(r_, best_energy_.layout, c_);
  }
  for (const ParetoPoint& point : front_.points()) {
    r->pareto.push_back(PredictLayout(r_, front_layouts_[point.id], c_));
  }
}

// The kind of a rejection reason: its field, the text before the first
// ':' ("memory: needs ..." -> "memory").
std::string ReasonKind(const std::string& reason) {
  const size_t colon = reason.find(':');
  return colon == std::string::npos ? reason : reason.substr(0, colon);
}

// SearchOptions::candidates instead of the whole space: each given layout
// resolved and judged by PredictLayout, ranked as the search ranks.
void RankCandidates(const ResolvedWorkload& w, const Calibration& c,
                    const SearchOptions& o, SearchResult* r) {
  std::vector<LayoutEvaluation> feasible;
  std::set<std::string> seen;
  for (const Layout& given : o.candidates) {
    LayoutEvaluation e = PredictLayout(w, given, c);
    // Resolved layouts count once (e.layout is resolved when it resolves).
    if (!seen.insert(FormatLayout(e.layout)).second) continue;
    ++r->searched;
    const std::string kind = e.feasible ? "" : ReasonKind(e.reason);
    if (e.feasible || kind == "memory") ++r->scored;
    if (!e.feasible) {
      ++r->rejected[kind];
      continue;
    }
    ++r->feasible;
    feasible.push_back(std::move(e));
  }
  // Ranked as the search ranks: tokens/s, then the order given.
  std::stable_sort(feasible.begin(), feasible.end(),
                   [](const LayoutEvaluation& a, const LayoutEvaluation& b) {
                     return a.prediction.tokens_per_s >
                            b.prediction.tokens_per_s;
                   });
  ParetoFront front;
  const LayoutEvaluation* best_energy = nullptr;
  for (size_t i = 0; i < feasible.size(); ++i) {
    const Prediction& p = feasible[i].prediction;
    if (best_energy == nullptr ||
        p.tokens_per_joule > best_energy->prediction.tokens_per_joule) {
      best_energy = &feasible[i];
    }
    front.Offer(p.tokens_per_s, p.tokens_per_joule, static_cast<int64_t>(i));
  }
  if (best_energy != nullptr) r->best_energy = *best_energy;
  for (const ParetoPoint& point : front.points()) {
    r->pareto.push_back(feasible[static_cast<size_t>(point.id)]);
  }
  if (!feasible.empty()) r->best_throughput = feasible.front();
  if (o.top > 0 && static_cast<int64_t>(feasible.size()) > o.top) {
    feasible.resize(static_cast<size_t>(o.top));
  }
  r->candidates = std::move(feasible);
}

}  // namespace

absl::StatusOr<SearchResult> SearchLayouts(const Workload& workload,
                                           const Calibration& calibration,
                                           const SearchOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(const ResolvedWorkload resolved,
                           ResolveWorkload(workload));
  return SearchLayouts(resolved, calibration, options);
}

absl::StatusOr<SearchResult> SearchLayouts(const ResolvedWorkload& resolved,
                                           const Calibration& calibration,
                                           const SearchOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const Workload& workload = resolved.workload;
  if (options.top < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "search.top: must be 0 (all) or positive, got ", options.top));
  }
  SearchResult result;
  if (!options.candidates.empty()) {
    if (static_cast<int64_t>(options.candidates.size()) >
        kMaxSearchCandidates) {
      return absl::InvalidArgumentError(absl::StrCat(
          "search.candidates: ", options.candidates.size(),
          " layouts, at most ", kMaxSearchCandidates));
    }
    RankCandidates(resolved, calibration, options, &result);
    if (result.feasible == 0) {
      result.best_throughput.reason = result.best_energy.reason =
          "no feasible layout among the candidates";
    }
    result.elapsed_ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count();
    return result;
  }
  Searcher searcher(resolved, calibration, options);
  searcher.Run(&result);
  if (!searcher.any_batch_reachable()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training.global_batch: ", workload.training.global_batch,
        " sequences cannot be split evenly on ", workload.cluster.world_size(),
        " GPUs: no layout has micro_batch x dp dividing it"));
  }
  if (result.feasible == 0) {
    result.best_throughput.reason = result.best_energy.reason =
        "no feasible layout";
  }
  result.elapsed_ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  return result;
}

}  // namespace tessera::costmodel
