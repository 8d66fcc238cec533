#include "core/layout.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tessera {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("layout.", field, ": ", message));
}

absl::StatusOr<int64_t> ParseCount(absl::string_view field,
                                   absl::string_view value, int64_t min_value,
                                   int64_t max_value) {
  int64_t n = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, n);
  if (value.empty() || ec != std::errc() || ptr != end || n < min_value ||
      n > max_value) {
    return FieldError(
        field, absl::StrCat("'", value, "' is not an integer in [", min_value,
                            ", ", max_value, "]"));
  }
  return n;
}

absl::StatusOr<bool> ParseFlag(absl::string_view field,
                               absl::string_view value) {
  if (value == "1" || value == "true" || value == "on") return true;
  if (value == "0" || value == "false" || value == "off") return false;
  return FieldError(field, absl::StrCat("'", value, "' is not 0/1/true/false"));
}

// Degrees are bounded so that products of them cannot overflow int64.
constexpr int64_t kMaxDegree = 1 << 20;

}  // namespace

absl::string_view RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "none";
}

absl::StatusOr<Recompute> ParseRecompute(absl::string_view text) {
  if (text == "none") return Recompute::kNone;
  if (text == "selective") return Recompute::kSelective;
  if (text == "full") return Recompute::kFull;
  return FieldError(
      "recompute", absl::StrCat("'", text, "' is not none, selective or full"));
}

absl::StatusOr<Layout> ParseLayout(absl::string_view text) {
  Layout layout;
  std::set<std::string, std::less<>> seen;
  for (absl::string_view token : absl::StrSplit(text, ',')) {
    token = absl::StripAsciiWhitespace(token);
    if (token.empty()) {
      if (absl::StripAsciiWhitespace(text).empty()) break;
      return absl::InvalidArgumentError(
          absl::StrCat("layout: empty field in '", text, "'"));
    }
    const size_t eq = token.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layout: '", token, "' is not key=value (in '", text, "')"));
    }
    const absl::string_view key =
        absl::StripAsciiWhitespace(token.substr(0, eq));
    const absl::string_view value =
        absl::StripAsciiWhitespace(token.substr(eq + 1));
    if (!seen.insert(std::string(key)).second) {
      return FieldError(key, "given twice");
    }
    absl::StatusOr<int64_t> n;
    if (key == "tp" || key == "pp" || key == "vpp" || key == "cp" ||
        key == "dp" || key == "micro_batch" || key == "grad_accum") {
      // dp and grad_accum may be 0: "derive" (what FormatLayout writes for a
      // layout not yet resolved).
      const bool derivable = key == "dp" || key == "grad_accum";
      n = ParseCount(key, value, derivable ? 0 : 1, kMaxDegree);
      if (!n.ok()) return n.status();
      if (key == "tp") layout.tp = *n;
      if (key == "pp") layout.pp = *n;
      if (key == "vpp") layout.vpp = *n;
      if (key == "cp") layout.cp = *n;
      if (key == "dp") layout.dp = *n;
      if (key == "micro_batch") layout.micro_batch = *n;
      if (key == "grad_accum") layout.grad_accum = *n;
    } else if (key == "zero") {
      n = ParseCount(key, value, 0, 3);
      if (!n.ok()) return n.status();
      layout.zero = *n;
    } else if (key == "shard_group") {
      n = ParseCount(key, value, 0, kMaxDegree);  // 0: derive
      if (!n.ok()) return n.status();
      layout.shard_group = *n;
    } else if (key == "sp") {
      absl::StatusOr<bool> sp = ParseFlag(key, value);
      if (!sp.ok()) return sp.status();
      layout.sp = *sp;
    } else if (key == "recompute") {
      absl::StatusOr<Recompute> r = ParseRecompute(value);
      if (!r.ok()) return r.status();
      layout.recompute = *r;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "layout: unknown field '", key,
          "' (known: tp, sp, pp, vpp, cp, dp, zero, shard_group, micro_batch, "
          "grad_accum, recompute)"));
    }
  }
  return layout;
}

std::string FormatLayout(const Layout& l) {
  return absl::StrCat(
      "tp=", l.tp, ",sp=", l.sp ? 1 : 0, ",pp=", l.pp, ",vpp=", l.vpp,
      ",cp=", l.cp, ",dp=", l.dp, ",zero=", l.zero,
      ",shard_group=", l.shard_group, ",micro_batch=", l.micro_batch,
      ",grad_accum=", l.grad_accum, ",recompute=", RecomputeName(l.recompute));
}

absl::StatusOr<Layout> ResolveLayout(const Layout& in, int64_t world_size,
                                     int64_t global_batch) {
  Layout l = in;
  if (world_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster: world size must be positive, got ", world_size));
  }
  if (global_batch <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "training.global_batch: must be positive, got ", global_batch));
  }
  const int64_t mp = l.model_parallel();
  if (world_size % mp != 0) {
    return FieldError(
        "tp", absl::StrCat("tp*pp*cp = ", l.tp, "*", l.pp, "*", l.cp, " = ", mp,
                           " does not divide the world size ", world_size));
  }
  const int64_t dp = world_size / mp;
  if (l.dp != 0 && l.dp != dp) {
    return FieldError("dp", absl::StrCat(l.dp, " but world ", world_size,
                                         " / (tp*pp*cp = ", mp, ") is ", dp));
  }
  l.dp = dp;
  // Two divisions rather than one product: micro_batch * dp can overflow.
  if (global_batch % l.micro_batch != 0 ||
      (global_batch / l.micro_batch) % dp != 0) {
    return FieldError(
        "micro_batch",
        absl::StrCat("global batch ", global_batch,
                     " is not reachable: not a multiple of micro_batch ",
                     l.micro_batch, " x dp ", dp));
  }
  const int64_t grad_accum = global_batch / l.micro_batch / dp;
  if (l.grad_accum != 0 && l.grad_accum != grad_accum) {
    return FieldError(
        "grad_accum",
        absl::StrCat(l.grad_accum, " but global batch ", global_batch,
                     " / (micro_batch ", l.micro_batch, " x dp ", dp, ") is ",
                     grad_accum));
  }
  l.grad_accum = grad_accum;
  if (l.sp && l.tp == 1) {
    return FieldError("sp", "sequence parallelism needs tp > 1");
  }
  if (l.vpp > 1 && l.pp == 1) {
    return FieldError("vpp", "interleaved stages need pp > 1");
  }
  if (l.vpp > 1 && l.grad_accum % l.pp != 0) {
    return FieldError(
        "vpp", absl::StrCat("the interleaved schedule needs the ", l.grad_accum,
                            " micro-batches to be a multiple of "
                            "pp ",
                            l.pp));
  }
  if (l.zero == 0) {
    if (l.shard_group > 1) {
      return FieldError("shard_group", "sharding needs zero >= 1");
    }
    l.shard_group = 1;
  } else {
    if (l.shard_group == 0) l.shard_group = dp;
    if (dp % l.shard_group != 0) {
      return FieldError(
          "shard_group",
          absl::StrCat(l.shard_group, " does not divide dp ", dp));
    }
  }
  return l;
}

absl::Status CheckLayoutFitsModel(const Layout& l, const ModelConfig& m,
                                  int64_t seq_len,
                                  bool allow_uneven_interleaving,
                                  int64_t blocks_besides_layers) {
  const std::pair<const char*, int64_t> split_by_tp[] = {
      {"heads", m.heads},
      {"kv_heads", m.kv_heads},
      {"ffn_hidden", m.ffn_hidden},
      {"vocab", m.vocab}};
  for (const auto& [what, dim] : split_by_tp) {
    if (dim % l.tp != 0) {
      return FieldError(
          "tp", absl::StrCat(l.tp, " does not divide ", what, " ", dim));
    }
  }
  const int64_t blocks = m.layers + blocks_besides_layers;
  const std::string what =
      blocks_besides_layers == 0
          ? absl::StrCat(m.layers, " layers")
          : absl::StrCat(blocks, " blocks (", m.layers, " layers and ",
                         blocks_besides_layers, " others)");
  if (l.pp > blocks) {
    return FieldError("pp",
                      absl::StrCat(l.pp, " stages exceed the ", what));
  }
  if (l.vpp > 1 && l.pp * l.vpp > blocks) {
    return FieldError("vpp", absl::StrCat("pp*vpp = ", l.pp * l.vpp,
                                          " model chunks exceed the ", what));
  }
  if (l.vpp > 1 && !allow_uneven_interleaving &&
      blocks % (l.pp * l.vpp) != 0) {
    return FieldError(
        "vpp", absl::StrCat("pp*vpp = ", l.pp * l.vpp, " does not divide the ",
                            what));
  }
  if (l.cp > 1 && seq_len % (2 * l.cp) != 0) {
    return FieldError("cp",
                      absl::StrCat("seq_len ", seq_len,
                                   " is not divisible by 2*cp = ", 2 * l.cp));
  }
  if (l.sp && (seq_len % l.cp != 0 || (seq_len / l.cp) % l.tp != 0)) {
    return FieldError("sp", absl::StrCat("seq_len/cp = ", seq_len, "/", l.cp,
                                         " is not divisible by tp ", l.tp));
  }
  return absl::OkStatus();
}

LayerRange StageLayers(int64_t layers, int64_t pp, int64_t vpp, int64_t stage,
                       int64_t chunk) {
  const int64_t chunks = pp * vpp;
  const int64_t m = chunk * pp + stage;
  const int64_t base = (layers + chunks - 1) / chunks;
  // The short chunks, one layer fewer each, alternate from the two ends:
  // m = 0, chunks-1, 1, chunks-2, ...: the first ceil(short/2) chunks and
  // the last floor(short/2).
  const int64_t short_chunks = base * chunks - layers;
  const int64_t short_front = (short_chunks + 1) / 2;
  const int64_t short_back = short_chunks / 2;
  auto short_before = [&](int64_t i) {  // short chunks among 0..i-1
    return std::min(i, short_front) +
           std::max<int64_t>(0, i - (chunks - short_back));
  };
  LayerRange r;
  r.begin = m * base - short_before(m);
  r.end = (m + 1) * base - short_before(m + 1);
  return r;
}

int64_t StageLayerCount(int64_t layers, int64_t pp, int64_t vpp,
                        int64_t stage) {
  const int64_t chunks = pp * vpp;
  const int64_t base = (layers + chunks - 1) / chunks;
  const int64_t short_chunks = base * chunks - layers;
  const int64_t short_front = (short_chunks + 1) / 2;
  const int64_t short_back = short_chunks / 2;
  // This stage's chunks are m = c * pp + stage, c = 0..vpp-1. Those below
  // short_front: c <= (short_front - 1 - stage) / pp.
  const int64_t front =
      stage < short_front ? (short_front - 1 - stage) / pp + 1 : 0;
  // Those at or above chunks - short_back: c >= ceil((chunks - short_back -
  // stage) / pp).
  const int64_t first_back = (chunks - short_back - stage + pp - 1) / pp;
  const int64_t back = std::max<int64_t>(0, vpp - first_back);
  return vpp * base - front - back;
}

}  // namespace tessera
