// tessera-trial: runs one trial of Llama training under a layout and writes
// its result as one JSON object (core/trial_result.h). Agents launch it; people
// can too:
//
//   tessera-trial --backend cpu --model tiny --ranks 8 --global-batch 16
//       --seq-len 128 --layout tp=2,pp=2,zero=3,micro_batch=1
//       --warmup 3 --steps 10 --json result.json
//
// One process per rank (what agents run for trials that span hosts): start
// the same command once per rank with --rank R and a shared
// --rendezvous-file; every process writes the whole trial's result.
//
//   tessera-trial --probe --ranks 8 --json probes.json   # hardware probes
//
// The cluster's collective sweep, one process per rank across agents
// (collective_probe.h), each started with its --rank:
//
//   tessera-trial --probe-collectives --rank R --ranks 4 --ranks-per-host 2
//       --rendezvous-file /shared/addr --json sweep.json
//
// Exit status: 0 whenever the JSON was written, whatever the trial's status
// (ok, oom, nan, timeout, crash, invalid); 2 when the command line itself is
// wrong (unknown flag, malformed value) and nothing was run; 1 when the JSON
// could not be written.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/file_io.h"
#include "core/flags.h"
#include "core/model_overrides.h"
#include "core/trial_result.h"
#include "core/trial_time_budget.h"
#include "executor/tessera_trial/run_collective_probe.h"
#include "executor/tessera_trial/executor_backends.h"
#include "executor/tessera_trial/probes.h"
#include "executor/tessera_trial/trial_runner.h"

namespace tessera::executor {
namespace {

struct TrialFlags {
  std::optional<std::string> backend, model, layout, json, data, mlp;
  std::optional<int64_t> layers, hidden, heads, kv_heads, ffn_hidden, vocab;
  std::optional<int64_t> ranks, global_batch, seq_len, warmup, steps, seed;
  std::optional<int64_t> data_token_bytes, memory_limit;
  std::optional<double> time_limit_s, lr, rope_theta, norm_eps, max_grad_norm;
  std::optional<bool> tie_embeddings;
  std::optional<int64_t> rank, ranks_per_host;
  std::optional<std::string> rendezvous_file, bind_host, advertise_host;
  bool probe = false;
  bool probe_collectives = false;
  std::optional<int64_t> probe_max_bytes;

  void Register(FlagSet& f) {
    f.AddSection("Trial");
    f.AddString("backend", "NAME", "cpu (default) or cuda", &backend);
    f.AddInt("ranks", "N", "ranks (GPUs, or CPU threads) in the trial", &ranks);
    f.AddString("layout", "K=V,...",
                "tp=2,sp=1,pp=2,vpp=1,cp=1,zero=3,shard_group=2,micro_batch=1,"
                "recompute=none (omitted fields take defaults; dp and "
                "grad_accum are derived)",
                &layout);
    f.AddSize("global-batch", "N", "sequences per optimizer step",
              SizeUnit::kCount, &global_batch);
    f.AddSize("seq-len", "N", "tokens per sequence", SizeUnit::kCount,
              &seq_len);
    f.AddInt("warmup", "N", "warm-up steps, not measured (default 10)",
             &warmup);
    f.AddInt("steps", "N", "measured steps (default 50)", &steps);
    f.AddString("json", "FILE", "where to write the result ('-': stdout)",
                &json);
    f.AddSize("memory-limit", "BYTES",
              "per-rank memory limit; past it the trial is oom (0: none)",
              SizeUnit::kBytes, &memory_limit);
    f.AddDouble("time-limit-s", "S",
                "the trial's time limit; past it the trial is timeout",
                &time_limit_s);
    f.AddInt("seed", "N", "parameter and data seed (default 1234)", &seed);
    f.AddDouble("lr", "LR", "AdamW learning rate (default 3e-4)", &lr);
    f.AddDouble("max-grad-norm", "N",
                "clip the global gradient norm to N before AdamW (default "
                "1.0, as Llama trains; 0: no clipping)",
                &max_grad_norm);
    f.AddString("data", "FILE",
                "token ids (uint16 or uint32, see --data-token-bytes); "
                "default: synthetic tokens",
                &data);
    f.AddInt("data-token-bytes", "2|4", "bytes per token id in --data",
             &data_token_bytes);
    f.AddSection("One process per rank");
    f.AddInt("rank", "R",
             "run only global rank R of --ranks in this process (the others "
             "run elsewhere); needs --rendezvous-file",
             &rank);
    f.AddString("rendezvous-file", "FILE",
                "where rank 0 publishes its address and the others find it",
                &rendezvous_file);
    f.AddString("bind-host", "HOST", "address to listen on (127.0.0.1)",
                &bind_host);
    f.AddString("advertise-host", "HOST",
                "address the other ranks dial (default: --bind-host)",
                &advertise_host);
    f.AddInt("ranks-per-host", "N",
             "ranks sharing this host's cores (default: --ranks)",
             &ranks_per_host);
    f.AddSection("Probes");
    f.AddSwitch("probe",
                "measure this host instead of running a trial: GEMM rate, "
                "copy and collective bandwidth for up to --ranks ranks",
                &probe);
    f.AddSwitch("probe-collectives",
                "measure the bus bandwidth of all_gather, reduce_scatter, "
                "all_reduce and sendrecv over the world of --ranks processes "
                "(needs --rank and --rendezvous-file; nodes = --ranks / "
                "--ranks-per-host)",
                &probe_collectives);
    f.AddSize("probe-max-bytes", "BYTES",
              "largest message of --probe-collectives (default 16MiB; sizes "
              "from 64 KiB by 4x)",
              SizeUnit::kBytes, &probe_max_bytes);
    f.AddSection("Model");
    f.AddString("model", "NAME", "a preset (tiny, small, llama3-8b, ...)",
                &model);
    f.AddInt("layers", "N", "transformer layers (instead of or over --model)",
             &layers);
    f.AddInt("hidden", "N", "hidden size", &hidden);
    f.AddInt("heads", "N", "attention heads", &heads);
    f.AddInt("kv-heads", "N", "key/value heads (default: heads)", &kv_heads);
    f.AddInt("ffn-hidden", "N", "MLP inner size", &ffn_hidden);
    f.AddInt("vocab", "N", "vocabulary size", &vocab);
    f.AddString("mlp", "KIND", "swiglu (the executor trains Llama models)",
                &mlp);
    f.AddDouble("rope-theta", "THETA", "rotary base (Llama 3: 500000)",
                &rope_theta);
    f.AddDouble("norm-eps", "EPS", "RMSNorm epsilon", &norm_eps);
    f.AddSwitch("tie-embeddings",
                "output projection shares the embedding (the executor trains "
                "untied models: an invalid result)",
                &tie_embeddings);
  }
};

// Writes `text` to `path` ('-': stdout) atomically (temp file + rename).
// False when it could not.
bool WriteText(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text << std::flush;
    return static_cast<bool>(std::cout);
  }
  return WriteFileAtomically(path, text).ok();
}

bool WriteResult(const std::string& path, const TrialResult& result) {
  return WriteText(
      path, TrialResultToJson(result).dump(
                2, ' ', false, nlohmann::json::error_handler_t::replace) +
                "\n");
}

// The trial of `c`, with the hard stop of its time budget
// (core/trial_time_budget.h, layer 3) for a step that never returns: a hung
// kernel or collective cannot be interrupted. The trial runs on a worker
// thread while this thread waits for it until TrialWatchdogAfter; past
// that, this thread writes a timeout result (`base` with the trial's model
// and layout) to `json_path` and ends the process with _exit, which runs
// no destructors under the hung worker's feet. Only this thread writes the
// result file, and the worker shares nothing with it but `c`, read by both.
TrialResult RunWithHardStop(const TrialConfig& c, const std::string& json_path,
                            const TrialResult& base) {
  if (c.time_limit_s <= 0) return RunTrial(c);
  std::packaged_task<TrialResult()> trial([&c] { return RunTrial(c); });
  std::future<TrialResult> done = trial.get_future();
  std::thread worker(std::move(trial));
  const auto until =
      std::chrono::steady_clock::now() +
      absl::ToChronoNanoseconds(TrialWatchdogAfter(c.time_limit_s));
  if (done.wait_until(until) == std::future_status::ready) {
    worker.join();
    return done.get();
  }
  TrialResult timeout = base;
  timeout.model = c.model.name;
  timeout.layout = c.layout;
  timeout.status = TrialStatus::kTimeout;
  timeout.reason = absl::StrCat(
      "no step finished within the time limit of ", c.time_limit_s, " s");
  _exit(WriteResult(json_path, timeout) ? 0 : 1);
}

int Main(const std::vector<std::string>& args) {
  FlagSet flags("tessera-trial");
  TrialFlags f;
  f.Register(flags);
  if (FlagSet::WantsHelp(args)) {
    std::cout << "tessera-trial: run one profiled training trial\n\n"
              << flags.Help();
    return 0;
  }
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  if (!f.json.has_value()) {
    std::cerr << "--json: required (a file, or '-' for stdout)\n";
    return 2;
  }
  if (f.probe) {
    nlohmann::json out;
    absl::StatusOr<const ExecutorBackend*> backend = FindExecutorBackend(
        f.backend.value_or("cpu"), ExecutorCapability::kProbes);
    if (backend.ok()) {
      out = ProbesToJson(
          (*backend)->run_probes(static_cast<int>(f.ranks.value_or(1))));
    } else {
      out = {{"probes", nlohmann::json::array()},
             {"error", absl::StrCat("backend: ", backend.status().message())}};
    }
    return WriteText(*f.json, out.dump(2) + "\n") ? 0 : 1;
  }
  if (f.probe_collectives) {
    CollectiveProbeConfig p;
    p.backend = f.backend.value_or("cpu");
    p.rank = f.rank.value_or(-1);
    p.ranks = f.ranks.value_or(1);
    p.ranks_per_node = f.ranks_per_host.value_or(1);
    p.rendezvous_file = f.rendezvous_file.value_or("");
    p.bind_host = f.bind_host.value_or("127.0.0.1");
    p.advertise_host = f.advertise_host.value_or("");
    p.time_limit_s = f.time_limit_s.value_or(0);
    if (f.probe_max_bytes.has_value()) {
      p.sweep.max_bytes = *f.probe_max_bytes;
      p.sweep.min_bytes = std::min(p.sweep.min_bytes, *f.probe_max_bytes);
    }
    return WriteText(*f.json, RunCollectiveProbe(p).dump(2) + "\n") ? 0 : 1;
  }
  TrialConfig c;
  c.backend = f.backend.value_or("cpu");
  c.process_rank = f.rank.value_or(-1);
  c.rendezvous_file = f.rendezvous_file.value_or("");
  c.bind_host = f.bind_host.value_or("127.0.0.1");
  c.advertise_host = f.advertise_host.value_or("");
  c.ranks_per_host = f.ranks_per_host.value_or(0);
  c.ranks = f.ranks.value_or(1);
  c.global_batch = f.global_batch.value_or(0);
  c.seq_len = f.seq_len.value_or(0);
  c.warmup_steps = f.warmup.value_or(10);
  c.steps = f.steps.value_or(50);
  c.memory_limit_bytes = f.memory_limit.value_or(0);
  c.time_limit_s = f.time_limit_s.value_or(0);
  c.seed = static_cast<uint64_t>(f.seed.value_or(1234));
  if (f.lr.has_value()) c.adamw.lr = static_cast<float>(*f.lr);
  if (f.max_grad_norm.has_value()) c.max_grad_norm = *f.max_grad_norm;
  c.data_path = f.data.value_or("");
  c.data_token_bytes = static_cast<int>(f.data_token_bytes.value_or(2));

  // What cannot be turned into a trial is an invalid result, not a usage
  // error: agents need a typed result for every lease.
  TrialResult result;
  result.backend = c.backend;
  result.ranks = c.ranks;
  result.global_batch = c.global_batch;
  result.seq_len = c.seq_len;
  result.warmup_steps = c.warmup_steps;
  result.status = TrialStatus::kInvalid;
  ModelOverrides overrides;
  overrides.layers = f.layers;
  overrides.hidden = f.hidden;
  overrides.heads = f.heads;
  overrides.kv_heads = f.kv_heads;
  overrides.ffn_hidden = f.ffn_hidden;
  overrides.vocab = f.vocab;
  overrides.mlp = f.mlp;
  overrides.rope_theta = f.rope_theta;
  overrides.norm_eps = f.norm_eps;
  overrides.tie_embeddings = f.tie_embeddings;
  absl::StatusOr<ModelConfig> model = ResolveModel(f.model, overrides);
  absl::StatusOr<Layout> layout = ParseLayout(f.layout.value_or(""));
  if (!model.ok()) {
    result.reason = std::string(model.status().message());
  } else if (!layout.ok()) {
    result.reason = std::string(layout.status().message());
  } else {
    c.model = *model;
    c.layout = *layout;
    result = RunWithHardStop(c, *f.json, result);
  }
  if (!WriteResult(*f.json, result)) {
    std::cerr << "--json: cannot write '" << *f.json << "'\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tessera::executor

int main(int argc, char** argv) {
  return tessera::executor::Main(
      std::vector<std::string>(argv + 1, argv + argc));
}
