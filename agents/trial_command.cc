#include "agents/trial_command.h"

#include "absl/strings/str_cat.h"
#include "core/layout.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "proto/convert.h"

namespace tessera::agents {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

// The trial's size, checked: gang_size agents of ranks_per_node ranks each.
struct Shape {
  int64_t gang_size = 1;
  int64_t node_rank = 0;
  int64_t ranks_per_node = 1;
  int64_t world_size = 1;
};

absl::StatusOr<Shape> CheckShape(const v1::TrialAssignment& a) {
  Shape s;
  s.gang_size = a.gang_size() == 0 ? 1 : a.gang_size();
  s.node_rank = a.node_rank();
  s.ranks_per_node = a.ranks_per_node();
  if (s.gang_size < 1) {
    return FieldError("assignment.gang_size",
                      absl::StrCat("must be positive, got ", a.gang_size()));
  }
  if (s.ranks_per_node < 1) {
    return FieldError("assignment.ranks_per_node",
                      absl::StrCat("must be positive, got ", s.ranks_per_node));
  }
  if (s.node_rank < 0 || s.node_rank >= s.gang_size) {
    return FieldError(
        "assignment.node_rank",
        absl::StrCat("must be in [0, ", s.gang_size, "), got ", s.node_rank));
  }
  s.world_size =
      a.world_size() == 0 ? s.gang_size * s.ranks_per_node : a.world_size();
  if (s.world_size != s.gang_size * s.ranks_per_node) {
    return FieldError(
        "assignment.world_size",
        absl::StrCat(a.world_size(), " is not gang_size ", s.gang_size,
                     " x ranks_per_node ", s.ranks_per_node));
  }
  return s;
}

// The flags every process of the trial shares (model, layout, batch, steps,
// limits, seed).
absl::StatusOr<std::vector<std::string>> CommonFlags(
    const AssignedTrial& t, absl::string_view backend) {
  const v1::TrialAssignment& a = t.wire;
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> flags,
                           ModelFlags(a.model()));
  TESSERA_ASSIGN_OR_RETURN(const Layout layout, t.layout);
  const std::vector<std::string> rest = {
      "--backend", std::string(backend), "--layout", FormatLayout(layout),
      "--global-batch", absl::StrCat(a.global_batch()), "--seq-len",
      absl::StrCat(a.seq_len()), "--warmup", absl::StrCat(a.warmup_steps()),
      "--steps", absl::StrCat(a.steps()),
      // tessera-trial's --seed is an int64 flag: the same 64 bits.
      "--seed", absl::StrCat(static_cast<int64_t>(a.seed()))};
  flags.insert(flags.end(), rest.begin(), rest.end());
  if (a.memory_limit_bytes() > 0) {
    flags.insert(flags.end(),
                 {"--memory-limit", absl::StrCat(a.memory_limit_bytes())});
  }
  if (a.time_limit_s() > 0) {
    flags.insert(flags.end(),
                 {"--time-limit-s", absl::StrCat(a.time_limit_s())});
  }
  return flags;
}

RankProcess MakeProcess(const TrialLaunchOptions& o, absl::string_view name,
                        int64_t local_rank, int64_t global_rank,
                        const std::vector<std::string>& flags) {
  RankProcess p;
  p.local_rank = local_rank;
  p.global_rank = global_rank;
  p.json_path = absl::StrCat(o.work_dir, "/", name, ".json");
  p.spec.argv.push_back(o.trial_binary);
  p.spec.argv.insert(p.spec.argv.end(), flags.begin(), flags.end());
  p.spec.argv.insert(p.spec.argv.end(), {"--json", p.json_path});
  p.spec.working_dir = o.work_dir;
  p.spec.stdout_path = absl::StrCat(o.work_dir, "/", name, ".out");
  p.spec.stderr_path = absl::StrCat(o.work_dir, "/", name, ".err");
  return p;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ModelFlags(const v1::ModelSpec& m) {
  if (m.has_tie_embeddings()) {
    return FieldError("model.tie_embeddings",
                      "tessera-trial trains untied embeddings only");
  }
  if (m.has_rope_theta()) {
    return FieldError("model.rope_theta", "tessera-trial takes no such option");
  }
  if (m.has_norm_eps()) {
    return FieldError("model.norm_eps", "tessera-trial takes no such option");
  }
  std::vector<std::string> flags;
  if (!m.preset().empty()) flags.insert(flags.end(), {"--model", m.preset()});
  const std::pair<const char*, std::optional<int64_t>> dims[] = {
      {"--layers", m.has_layers() ? std::optional(m.layers()) : std::nullopt},
      {"--hidden", m.has_hidden() ? std::optional(m.hidden()) : std::nullopt},
      {"--heads", m.has_heads() ? std::optional(m.heads()) : std::nullopt},
      {"--kv-heads",
       m.has_kv_heads() ? std::optional(m.kv_heads()) : std::nullopt},
      {"--ffn-hidden",
       m.has_ffn_hidden() ? std::optional(m.ffn_hidden()) : std::nullopt},
      {"--vocab", m.has_vocab() ? std::optional(m.vocab()) : std::nullopt}};
  for (const auto& [flag, value] : dims) {
    if (value.has_value())
      flags.insert(flags.end(), {flag, absl::StrCat(*value)});
  }
  if (m.has_mlp()) flags.insert(flags.end(), {"--mlp", m.mlp()});
  return flags;
}

absl::StatusOr<TrialLaunch> BuildTrialLaunch(const AssignedTrial& t,
                                             const TrialLaunchOptions& o) {
  const v1::TrialAssignment& a = t.wire;
  const std::string backend =
      a.backend().empty() ? o.default_backend : a.backend();
  absl::StatusOr<const TrialBackend*> kind = FindTrialBackend(backend);
  if (!kind.ok()) {
    return FieldError("assignment.backend", kind.status().message());
  }
  TESSERA_ASSIGN_OR_RETURN(Shape shape, CheckShape(a));
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> common,
                           CommonFlags(t, backend));
  TrialLaunch launch;
  launch.per_rank = shape.gang_size > 1 || (*kind)->process_per_rank;
  if (!launch.per_rank) {
    std::vector<std::string> flags = common;
    flags.insert(flags.end(), {"--ranks", absl::StrCat(shape.ranks_per_node)});
    launch.processes.push_back(MakeProcess(o, "trial", 0, -1, flags));
    return launch;
  }
  launch.rendezvous_file = absl::StrCat(o.work_dir, "/rendezvous");
  launch.relay_rendezvous = shape.gang_size > 1;
  launch.publishes_rendezvous = launch.relay_rendezvous && shape.node_rank == 0;
  for (int64_t local = 0; local < shape.ranks_per_node; ++local) {
    const int64_t rank = shape.node_rank * shape.ranks_per_node + local;
    std::vector<std::string> flags = common;
    flags.insert(flags.end(),
                 {"--rank", absl::StrCat(rank), "--ranks",
                  absl::StrCat(shape.world_size), "--rendezvous-file",
                  launch.rendezvous_file, "--ranks-per-host",
                  absl::StrCat(shape.ranks_per_node)});
    if (launch.relay_rendezvous) {
      flags.insert(flags.end(), {"--bind-host", "0.0.0.0", "--advertise-host",
                                 o.advertise_host});
    }
    launch.processes.push_back(
        MakeProcess(o, absl::StrCat("rank-", rank), local, rank, flags));
  }
  return launch;
}

}  // namespace tessera::agents
