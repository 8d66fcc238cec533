// tessera-cuda-trial: RunCudaTrial from the command line, with tessera-trial's
// trial flags and JSON (core/trial_result.h). It exists so that the CUDA
// path runs (bench/cuda/run_1b.sh, GPU sessions) before tessera-trial
// dispatches --backend cuda to RunCudaTrial; afterwards both give the same
// result.
//
//   tessera-cuda-trial --layers 16 --hidden 2048 --heads 16 --kv-heads 8
//       --ffn-hidden 5632 --vocab 32000 --seq-len 2048 --global-batch 8
//       --layout micro_batch=8 --warmup 3 --steps 10 --json result.json
//
// Exit status as tessera-trial's: 0 whenever the JSON was written, 2 for a
// malformed command line, 1 when the JSON could not be written.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "core/flags.h"
#include "core/model_overrides.h"
#include "core/trial_result.h"
#include "executor/cuda/cuda_trial.h"

namespace tessera::executor {
namespace {

int Main(const std::vector<std::string>& args) {
  std::optional<std::string> model_name, layout, json, mlp, rendezvous, data;
  std::optional<int64_t> layers, hidden, heads, kv_heads, ffn, vocab;
  std::optional<int64_t> ranks, global_batch, seq_len, warmup, steps, seed;
  std::optional<int64_t> memory_limit, rank, ranks_per_host, token_bytes;
  std::optional<double> time_limit_s, lr;
  FlagSet f("tessera-cuda-trial");
  f.AddSection("Trial");
  f.AddInt("ranks", "N", "ranks (default 1)", &ranks);
  f.AddString("layout", "K=V,...", "the layout (tessera-trial's syntax)",
              &layout);
  f.AddInt("global-batch", "N", "sequences per optimizer step", &global_batch);
  f.AddInt("seq-len", "N", "tokens per sequence", &seq_len);
  f.AddInt("warmup", "N", "warm-up steps (default 10)", &warmup);
  f.AddInt("steps", "N", "measured steps (default 50)", &steps);
  f.AddString("json", "FILE", "where to write the result ('-': stdout)", &json);
  f.AddInt("memory-limit", "BYTES", "per-rank memory limit (0: none)",
           &memory_limit);
  f.AddDouble("time-limit-s", "S", "the trial's time limit", &time_limit_s);
  f.AddInt("seed", "N", "parameter and data seed (default 1234)", &seed);
  f.AddDouble("lr", "LR", "AdamW learning rate (default 3e-4)", &lr);
  f.AddString("data", "FILE", "token ids (default: synthetic)", &data);
  f.AddInt("data-token-bytes", "2|4", "bytes per token id in --data",
           &token_bytes);
  f.AddInt("rank", "R", "run only rank R (NCCL, one process per GPU)", &rank);
  f.AddString("rendezvous-file", "FILE", "NCCL unique id rendezvous",
              &rendezvous);
  f.AddInt("ranks-per-host", "N", "ranks on this host (GPU = rank % N)",
           &ranks_per_host);
  f.AddSection("Model");
  f.AddString("model", "NAME", "a preset (tiny, small, llama3-8b, ...)",
              &model_name);
  f.AddInt("layers", "N", "transformer layers", &layers);
  f.AddInt("hidden", "N", "hidden size", &hidden);
  f.AddInt("heads", "N", "attention heads", &heads);
  f.AddInt("kv-heads", "N", "key/value heads", &kv_heads);
  f.AddInt("ffn-hidden", "N", "MLP inner size", &ffn);
  f.AddInt("vocab", "N", "vocabulary size", &vocab);
  f.AddString("mlp", "KIND", "swiglu", &mlp);
  if (FlagSet::WantsHelp(args)) {
    std::cout << "tessera-cuda-trial: one trial on the CUDA backend\n\n"
              << f.Help();
    return 0;
  }
  if (absl::Status s = f.Parse(args); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  if (!json.has_value()) {
    std::cerr << "--json: required (a file, or '-' for stdout)\n";
    return 2;
  }
  TrialConfig c;
  c.backend = "cuda";
  c.ranks = ranks.value_or(1);
  c.global_batch = global_batch.value_or(0);
  c.seq_len = seq_len.value_or(0);
  c.warmup_steps = warmup.value_or(10);
  c.steps = steps.value_or(50);
  c.memory_limit_bytes = memory_limit.value_or(0);
  c.time_limit_s = time_limit_s.value_or(0);
  c.seed = static_cast<uint64_t>(seed.value_or(1234));
  if (lr.has_value()) c.adamw.lr = static_cast<float>(*lr);
  c.data_path = data.value_or("");
  c.data_token_bytes = static_cast<int>(token_bytes.value_or(2));
  c.process_rank = rank.value_or(-1);
  c.rendezvous_file = rendezvous.value_or("");
  c.ranks_per_host = ranks_per_host.value_or(0);

  TrialResult result;
  result.backend = "cuda";
  result.status = TrialStatus::kInvalid;
  ModelOverrides overrides;
  overrides.layers = layers;
  overrides.hidden = hidden;
  overrides.heads = heads;
  overrides.kv_heads = kv_heads;
  overrides.ffn_hidden = ffn;
  overrides.vocab = vocab;
  overrides.mlp = mlp;
  absl::StatusOr<ModelConfig> model = ResolveModel(model_name, overrides);
  absl::StatusOr<Layout> parsed = ParseLayout(layout.value_or(""));
  if (!model.ok()) {
    result.reason = std::string(model.status().message());
  } else if (!parsed.ok()) {
    result.reason = std::string(parsed.status().message());
  } else {
    c.model = *model;
    c.layout = *parsed;
    result = RunCudaTrial(c);
  }
  const std::string text = TrialResultToJson(result).dump(2) + "\n";
  if (*json == "-") {
    std::cout << text << std::flush;
    return std::cout ? 0 : 1;
  }
  const std::string tmp = *json + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) return 1;
  }
  return std::rename(tmp.c_str(), json->c_str()) == 0 ? 0 : 1;
}

}  // namespace
}  // namespace tessera::executor

int main(int argc, char** argv) {
  return tessera::executor::Main(
      std::vector<std::string>(argv + 1, argv + argc));
}
