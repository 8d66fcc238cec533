#include "core/command_template.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {
namespace {

bool Known(absl::string_view name) {
  for (const CommandPlaceholder& p : CommandPlaceholders()) {
    if (name == p.name) return true;
  }
  return false;
}

std::string KnownNames() {
  std::vector<std::string> names;
  for (const CommandPlaceholder& p : CommandPlaceholders()) {
    names.push_back(absl::StrCat("{", p.name, "}"));
  }
  return absl::StrJoin(names, " ");
}

// Walks `text`: literal pieces go to `literal`, placeholder names to
// `placeholder`. Errors as CommandTemplatePlaceholders says.
template <typename Literal, typename Placeholder>
absl::Status Walk(absl::string_view text, Literal literal,
                  Placeholder placeholder) {
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError("the command template is empty");
  }
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      literal(absl::string_view(&text[i], 1));
      i += 2;
      continue;
    }
    if (c == '}') {
      return absl::InvalidArgumentError(absl::StrCat(
          "stray '}' at offset ", i, " (write '}}' for a literal brace)"));
    }
    if (c != '{') {
      const size_t next = text.find_first_of("{}", i);
      const size_t end = next == absl::string_view::npos ? text.size() : next;
      literal(text.substr(i, end - i));
      i = end;
      continue;
    }
    const size_t close = text.find('}', i);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unclosed '{' at offset ", i, " (write '{{' for a literal brace)"));
    }
    const absl::string_view name = text.substr(i + 1, close - i - 1);
    if (!Known(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown placeholder {", name, "} at offset ", i,
                       "; known: ", KnownNames()));
    }
    if (absl::Status s = placeholder(name); !s.ok()) return s;
    i = close + 1;
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<CommandPlaceholder>& CommandPlaceholders() {
  static const std::vector<CommandPlaceholder>* const kPlaceholders =
      new std::vector<CommandPlaceholder>{
          // The gang and its rendezvous (the torchrun environment).
          {"nodes", "agents (nodes) in the trial"},
          {"gpus_per_node", "ranks each agent runs (GPUs per node)"},
          {"world_size", "ranks in the whole trial"},
          {"node_rank", "this agent's place in the gang, 0-based"},
          {"master_addr", "host of the gang's rendezvous (node rank 0)"},
          {"master_port", "port of the gang's rendezvous"},
          {"rendezvous", "master_addr:master_port"},
          // The layout.
          {"tp", "tensor-parallel degree"},
          {"sp", "sequence parallelism: 1 or 0"},
          {"pp", "pipeline-parallel degree"},
          {"vpp", "virtual pipeline stages per rank"},
          {"cp", "context-parallel degree"},
          {"dp", "data-parallel degree"},
          {"zero", "ZeRO / FSDP stage, 0-3"},
          {"shard_group", "ranks one copy of the model states is sharded over"},
          {"micro_batch", "sequences per micro-batch"},
          {"grad_accum", "micro-batches per optimizer step"},
          {"recompute", "activation recomputation: none, selective or full"},
          // The workload and the model.
          {"global_batch", "sequences per optimizer step"},
          {"seq_len", "tokens per sequence"},
          {"precision", "number format of the linear layers: bf16 or fp8"},
          {"stack", "the study's training stack"},
          {"model", "the model preset, or custom"},
          {"layers", "transformer layers (after the study's scale-down)"},
          {"hidden", "hidden size"},
          {"heads", "attention heads"},
          {"kv_heads", "key/value heads"},
          {"ffn_hidden", "MLP hidden size"},
          {"vocab", "vocabulary size"},
          // The trial.
          {"warmup_steps", "steps run before the measured ones"},
          {"steps", "measured steps"},
          {"total_steps", "warmup_steps + steps"},
          {"seed", "parameter and data seed"},
          {"memory_limit_bytes", "memory limit per rank (0: none)"},
          {"time_limit_s", "the trial's time limit in seconds"},
          {"trial_id", "the planner's trial id"},
          {"trial_dir", "the trial's own folder (the working folder)"},
          {"metrics", "the JSON Lines file to write ($TESSERA_METRICS)"},
          {"config", "the trial's layout and workload as a JSON file"},
      };
  return *kPlaceholders;
}

absl::StatusOr<std::vector<std::string>> CommandTemplatePlaceholders(
    absl::string_view text) {
  std::vector<std::string> used;
  absl::Status s = Walk(
      text, [](absl::string_view) {},
      [&](absl::string_view name) {
        for (const std::string& u : used) {
          if (u == name) return absl::OkStatus();
        }
        used.emplace_back(name);
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return used;
}

absl::Status CheckCommandTemplate(absl::string_view text) {
  return CommandTemplatePlaceholders(text).status();
}

absl::StatusOr<std::string> ExpandCommandTemplate(
    absl::string_view text, const std::map<std::string, std::string>& values) {
  std::string out;
  absl::Status s = Walk(
      text, [&](absl::string_view piece) { absl::StrAppend(&out, piece); },
      [&](absl::string_view name) {
        auto it = values.find(std::string(name));
        if (it == values.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("no value for {", name, "}"));
        }
        absl::StrAppend(&out, ShellQuote(it->second));
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return out;
}

std::string ShellQuote(absl::string_view value) {
  bool plain = !value.empty();
  for (char c : value) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("_./:=,+@%-").find(c) == std::string_view::npos) {
      plain = false;
    }
  }
  if (plain) return std::string(value);
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace tessera
