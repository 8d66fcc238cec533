#!/usr/bin/env python3
"""Applies small semantic mutations to the cost model and the training
engine one at a time, rebuilds the tests that judge them, runs them, and
reports which mutations the suite kills (a test fails) and which survive.
The tree is restored after each one.

    tests/mutations/planner_mutations.py [--build build] [--only NAME]

Each mutation is (name, file, text to find, replacement[, test targets]);
the text must occur exactly once; without targets the planner's TESTS judge
it. Run from a configured build (cmake -B build).
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MUTATIONS = [
    ("flash attention computes the whole square",
     "costmodel/compute/compute_time.cc",
     "stack.attention == AttentionKernel::kFlash ? 0.5 : 1.0",
     "stack.attention == AttentionKernel::kFlash ? 1.0 : 1.0"),
    ("attention efficiency ignores the sequence length",
     "costmodel/compute/compute_time.cc",
     "c.attention_efficiency * s / (s + c.attention_seq_half_tokens)",
     "c.attention_efficiency"),
    ("no logits working set",
     "costmodel/memory/memory_model.cc",
     "if (sp.last) m.logits_bytes = layer.logits_bytes;",
     ""),
    ("FSDP never re-gathers for the backward",
     "costmodel/comm/fsdp_comm.cc",
     "const bool regather = l.zero == 3 && stack.fsdp.reshard_after_forward;",
     "const bool regather = false;"),
    ("FSDP gathers per micro-batch under torchtitan's pipeline",
     "costmodel/comm/fsdp_comm.cc",
     "stack.fsdp.keeps_gathered_across_pipeline_micro_batches;",
     "false;"),
    ("only the first pipeline stage sets the pace",
     "costmodel/step_model.cc",
     "    if (s.micro_s > beat.micro_s) beat = s;",
     ""),
    ("the bubble counts compute only",
     "costmodel/step_model.cc",
     "PipelineBubbleFraction(l.pp, l.vpp, l.grad_accum) * m * beat.micro_s;",
     "PipelineBubbleFraction(l.pp, l.vpp, l.grad_accum) * m * beat.micro_compute_s;"),
    ("exposed tensor-parallel time not attributed to tp",
     "costmodel/step_model.cc",
     "  p.tp_exposed_s = m * beat.tp_exposed_micro_s;",
     "  p.tp_exposed_s = 0;"),
    ("overlapped pipeline sends counted as exposed",
     "costmodel/step_model.cc",
     "  s.pp_exposed_micro_s = (1 - c.pp_overlap_efficiency) * sends_s;",
     "  s.pp_exposed_micro_s = sends_s;"),
    ("the memory headroom is not kept free",
     "costmodel/memory/memory_model.cc",
     "  return static_cast<double>(cluster.gpu.memory_bytes) -\n         MemoryHeadroomBytes(cluster);",
     "  return static_cast<double>(cluster.gpu.memory_bytes);"),
    ("pipeline sends off the critical path",
     "costmodel/step_model.cc",
     "dp.per_micro_batch_exposed_s +\n              (1 - c.pp_overlap_efficiency) * sends_s;",
     "dp.per_micro_batch_exposed_s +\n              0 * sends_s;"),
    ("layer-fraction selective policies ignored",
     "costmodel/memory/layer_activations.cc",
     "return scale * (f > 0 ? f * input + (1 - f) * kept : kept);",
     "return scale * kept;"),
    ("pipeline waits draw idle power",
     "costmodel/step_model.cc",
     "(p.exposed_comm_s + p.bubble_s) / p.step_time_s, c);",
     "p.exposed_comm_s / p.step_time_s, c);"),
    ("the search ignores the stack's ZeRO stages",
     "costmodel/search/search.cc",
     "for (int64_t z : s.zero_stages) {",
     "for (int64_t z : {0, 1, 2, 3}) {"),
    ("stack options' collective bytes ignored",
     "costmodel/stacks/training_stack.cc",
     "if (field == \"gradient_reduce\") s.comm_bytes.gradient_reduce = value;",
     ""),
    ("uneven stages heavier at the front",
     "core/layout.cc",
     "  const int64_t short_front = (short_chunks + 1) / 2;\n  const int64_t short_back = short_chunks / 2;\n  auto",
     "  const int64_t short_front = 0;\n  const int64_t short_back = short_chunks;\n  auto"),
    ("fp8 casts free",
     "costmodel/compute/compute_time.cc",
     "r.elementwise_s += c.fp8_cast_traffic_factor * cast_bytes / HbmBytesPerS(gpu);",
     ""),
    ("model states ignore the stack's bytes",
     "costmodel/memory/memory_model.cc",
     "m.master_weights_bytes = b.master_weights * sp.params",
     "m.master_weights_bytes = 4 * sp.params"),
    ("FSDP exposure without the first unit's floor",
     "costmodel/comm/fsdp_comm.cc",
     "return std::max({0.0, floor_s, comm_s - efficiency * window_s});",
     "return std::max({0.0, comm_s - efficiency * window_s});"),
    # The training engine's optimizer, judged by the multi-step PyTorch
    # oracle (tests/executor/engine/torch_training_oracle_test.cc).
    ("AdamW's step counter frozen at 1",
     "executor/engine/rank_engine.cc",
     "  adamw.step = step_ + 1;",
     "  adamw.step = 1;",
     ["engine_torch_reference_test"]),
    ("weight decay on the RMSNorm weights",
     "executor/engine/model_shard.cc",
     "                      hidden,          0,  0.0, false,  true};",
     "                      hidden,          0,  0.0, true,  true};",
     ["engine_torch_reference_test"]),
    ("gradient clipping off",
     "executor/engine/param_store.cc",
     "    if (coefficient < 1) {",
     "    if (false && coefficient < 1) {",
     ["engine_torch_reference_test"]),
    # The layouts, judged by every layout's step-0 gradient against the
    # single-rank run and PyTorch (tests/executor/engine/
    # layout_equivalence_test.cc): AdamW's first update is about lr * sign(g),
    # so the weights after 3 steps hardly see a gradient's scale.
    ("RMSNorm gradients multiplied by tp under sequence parallelism",
     "executor/engine/param_store.cc",
     "    TESSERA_RETURN_IF_ERROR(groups_.tp->AllReduce(part, part, ReduceOp::kSum));\n",
     "    TESSERA_RETURN_IF_ERROR(groups_.tp->AllReduce(part, part, ReduceOp::kSum));\n"
     "    backend_.Scale(part, part.numel, static_cast<float>(groups_.tp->size()));\n",
     ["engine_layout_equivalence_test"]),
    ("HSDP replicas of two not all-reduced",
     "executor/engine/param_store.cc",
     "  if (groups_.replica->size() > 1) {",
     "  if (groups_.replica->size() > 2) {",
     ["engine_layout_equivalence_test"]),
]

TESTS = ["core_test", "planner_test", "planner_behaviour_test",
         "planner_calibration_fit_test", "planner_megatron_validation_test",
         "planner_published_runs_test"]


def run(cmd, **kw):
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    results = []
    for name, path, find, repl, *targets in MUTATIONS:
        tests = targets[0] if targets else TESTS
        if args.only and args.only not in name:
            continue
        full = os.path.join(ROOT, path)
        original = open(full).read()
        if original.count(find) != 1:
            results.append((name, "NOT APPLIED (text not found once)"))
            continue
        try:
            open(full, "w").write(original.replace(find, repl))
            b = run(["ninja", "-C", args.build] + tests)
            if b.returncode != 0:
                results.append((name, "killed (does not build)"))
                continue
            failed = []
            for t in tests:
                exe = run(["find", args.build, "-name", t, "-type", "f"]).stdout.split()
                if not exe:
                    continue
                r = run([exe[0]])
                if r.returncode != 0:
                    failed.append(t)
            results.append((name, "killed by " + ", ".join(failed) if failed
                            else "SURVIVED"))
        finally:
            open(full, "w").write(original)
    run(["ninja", "-C", args.build] + TESTS + ["engine_torch_reference_test",
                                              "engine_layout_equivalence_test"])
    width = max(len(n) for n, _ in results)
    for name, outcome in results:
        print(f"{name:<{width}}  {outcome}")
    return 1 if any(o == "SURVIVED" for _, o in results) else 0


if __name__ == "__main__":
    sys.exit(main())
