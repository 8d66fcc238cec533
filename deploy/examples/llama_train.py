#!/usr/bin/python3
"""llama_train.py - a small, real PyTorch Llama training script for Tessera trials.

Tessera's agents run this as a user-framework ("command" backend) trial on CPU:
it trains a tiny Llama with data parallelism (DDP, optionally ZeRO-1) for
warm-up + measured steps and reports one metrics line per optimizer step.
Run it with Debian's torch (/usr/bin/python3, torch 1.13): FSDP cannot be
imported there, so only ZeRO 0 (DDP) and ZeRO 1 (ZeroRedundancyOptimizer) exist.

How Tessera runs it (one torchrun per node/agent, static rendezvous; torch 1.13's
torchrun needs `-r 1 -t 1` on Python 3.11, its default "0" crashes):
  /usr/bin/torchrun --nnodes {nodes} --nproc_per_node {gpus_per_node}
    --node_rank {node_rank} --master_addr {master_addr} --master_port {master_port}
    -r 1 -t 1 deploy/examples/llama_train.py --layers {layers} --hidden {hidden}
    --heads {heads} --kv-heads {kv_heads} --ffn-hidden {ffn_hidden} --vocab {vocab}
    --global-batch {global_batch} --seq-len {seq_len} --micro-batch {micro_batch}
    --grad-accum {grad_accum} --dp {dp} --zero {zero} --recompute {recompute}
    --warmup-steps {warmup_steps} --steps {steps} --seed {seed}
    --memory-limit-bytes {memory_limit_bytes}
It also runs without torchrun as a single process: /usr/bin/python3 llama_train.py ...

Metrics (--metrics PATH, default $TESSERA_METRICS; neither set: no file). Rank 0
appends one JSON object per line per optimizer step, warm-up steps included
(Tessera drops them), flushed after every line:
  {"step": k,                 1-based, counting warm-up steps
   "tokens": int,             global_batch * seq_len (whole job, this step)
   "step_time_s": float,      wall time of the step, max over ranks
   "loss": float | null,      mean over micro-batches and ranks; null if not finite
   "peak_memory_bytes": int}  RSS high-water mark minus the pre-model baseline,
                              max over ranks

Exit codes: 0 ok; 1 out of memory (--memory-limit-bytes) or crash;
2 bad arguments / layout; 3 loss became NaN/inf.
(torch 1.13's torchrun itself exits 1 when any worker fails; the worker's own code
appears in torchrun's error summary.)
"""
import argparse
import contextlib
import json
import math
import os
import resource
import sys
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint
from torch.distributed.optim import ZeroRedundancyOptimizer

EXIT_OK, EXIT_CRASH, EXIT_BAD_ARGS, EXIT_NAN = 0, 1, 2, 3
RANK = int(os.environ.get("RANK", "0"))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))


def finish(code):
    """Exit now, skipping interpreter teardown. With torch 1.13 + gloo, tearing down
    DDP's process group at exit can deadlock (the destructor joins a gloo worker thread
    that waits for the GIL held by the exiting thread), so a finished rank could hang."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def fail(code, message, every_rank=False):
    """Print one line on stderr (once per node unless every_rank) and exit."""
    if every_rank or LOCAL_RANK == 0:
        print(message, file=sys.stderr, flush=True)
    finish(code)


def parse_args():
    p = argparse.ArgumentParser(description="Tiny Llama data-parallel training trial.")
    a = p.add_argument
    a("--layers", type=int, default=2); a("--hidden", type=int, default=64)
    a("--heads", type=int, default=4); a("--kv-heads", type=int, default=2)
    a("--ffn-hidden", type=int, default=172); a("--vocab", type=int, default=256)
    a("--global-batch", type=int, default=4, help="sequences per optimizer step, whole job")
    a("--seq-len", type=int, default=32)
    a("--micro-batch", type=int, default=2, help="sequences per rank per forward")
    a("--grad-accum", type=int, default=0, help="0 = derive from the batch sizes")
    a("--dp", type=int, default=0, help="data-parallel degree, 0 = world size")
    a("--zero", type=int, default=0, help="0 = DDP, 1 = ZeroRedundancyOptimizer")
    a("--recompute", choices=["none", "selective", "full"], default="none")
    a("--tp", type=int, default=1); a("--pp", type=int, default=1); a("--cp", type=int, default=1)
    a("--warmup-steps", type=int, default=1); a("--steps", type=int, default=5)
    a("--seed", type=int, default=1234); a("--lr", type=float, default=3e-3)
    a("--memory-limit-bytes", type=int, default=0, help="0 = no limit")
    a("--hang-at-step", type=int, default=0, help="test hook: rank 0 sleeps forever at this step")
    a("--metrics", default=os.environ.get("TESSERA_METRICS") or None)
    a("--threads", type=int, default=1, help="torch intra-op threads per rank")
    return p.parse_args()  # unknown flags / bad values: argparse exits 2


def check_layout(args):
    """Validate the layout; fills in dp and grad_accum. Exits 2 on any mismatch."""
    for name in ("tp", "pp", "cp"):
        if getattr(args, name) != 1:
            fail(EXIT_BAD_ARGS, f"--{name} {getattr(args, name)}: this script runs data "
                 "parallelism only (--tp/--pp/--cp must be 1)")
    if args.zero not in (0, 1):
        fail(EXIT_BAD_ARGS, f"--zero {args.zero}: only 0 (DDP) and 1 (ZeroRedundancyOptimizer) "
             "are supported (FSDP is unavailable in this torch)")
    for name in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
                 "global_batch", "seq_len", "micro_batch", "steps", "threads"):
        if getattr(args, name) < 1:
            fail(EXIT_BAD_ARGS, f"--{name.replace('_', '-')} {getattr(args, name)}: must be >= 1")
    for name in ("grad_accum", "dp", "warmup_steps", "memory_limit_bytes", "hang_at_step"):
        if getattr(args, name) < 0:
            fail(EXIT_BAD_ARGS, f"--{name.replace('_', '-')} {getattr(args, name)}: must be >= 0")
    if args.hidden % args.heads:
        fail(EXIT_BAD_ARGS, f"--hidden {args.hidden} is not divisible by --heads {args.heads}")
    if args.heads % args.kv_heads:
        fail(EXIT_BAD_ARGS, f"--heads {args.heads} is not divisible by --kv-heads {args.kv_heads}")
    if (args.hidden // args.heads) % 2:
        fail(EXIT_BAD_ARGS, f"--hidden {args.hidden} / --heads {args.heads} = "
             f"{args.hidden // args.heads}: RoPE needs an even head dimension")
    args.dp = args.dp or WORLD
    if args.dp != WORLD:
        fail(EXIT_BAD_ARGS, f"--dp {args.dp} != world size {WORLD} (nodes * procs per node)")
    per_pass = args.dp * args.micro_batch  # sequences per micro-step, whole job
    if args.grad_accum == 0:
        if args.global_batch % per_pass:
            fail(EXIT_BAD_ARGS, f"--global-batch {args.global_batch} is not divisible by "
                 f"--dp {args.dp} * --micro-batch {args.micro_batch} = {per_pass}")
        args.grad_accum = args.global_batch // per_pass
    elif args.global_batch != per_pass * args.grad_accum:
        fail(EXIT_BAD_ARGS, f"--global-batch {args.global_batch} != --dp {args.dp} * "
             f"--micro-batch {args.micro_batch} * --grad-accum {args.grad_accum} "
             f"= {per_pass * args.grad_accum}")


# ----------------------------------------------------------------------------- model
class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(seq_len, head_dim, base=10000.0):
    """cos/sin of the rotary angles, shape (seq_len, head_dim / 2)."""
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(seq_len).float(), inv_freq)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    """Rotate consecutive pairs (x0, x1) of the head dimension; x is (b, h, s, d)."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, hidden, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.wq = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if self.kv_heads != self.heads:  # grouped-query: each kv head serves a group of q heads
            group = self.heads // self.kv_heads
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        sdpa = getattr(F, "scaled_dot_product_attention", None)  # absent in torch 1.13
        if sdpa is not None:
            out = sdpa(q, k, v, is_causal=True)
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
            causal = torch.ones(s, s, dtype=torch.bool).triu(1)
            out = scores.masked_fill(causal, float("-inf")).softmax(-1) @ v
        return self.wo(out.transpose(1, 2).reshape(b, s, -1))


class SwiGLU(nn.Module):
    def __init__(self, hidden, ffn_hidden):
        super().__init__()
        self.gate = nn.Linear(hidden, ffn_hidden, bias=False)
        self.up = nn.Linear(hidden, ffn_hidden, bias=False)
        self.down = nn.Linear(ffn_hidden, hidden, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.attn_norm, self.mlp_norm = RMSNorm(args.hidden), RMSNorm(args.hidden)
        self.attn = Attention(args.hidden, args.heads, args.kv_heads)
        self.mlp = SwiGLU(args.hidden, args.ffn_hidden)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.head_dim = args.hidden // args.heads
        self.embed = nn.Embedding(args.vocab, args.hidden)
        self.blocks = nn.ModuleList(Block(args) for _ in range(args.layers))
        self.norm = RMSNorm(args.hidden)
        self.output = nn.Linear(args.hidden, args.vocab, bias=False)  # untied from embed
        # Which blocks are recomputed in backward: "full" = all of them; "selective" =
        # every other block (a simplification of Megatron's attention-only recompute).
        self.recompute = [args.recompute == "full" or (args.recompute == "selective" and i % 2 == 0)
                          for i in range(args.layers)]
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, tokens, targets):
        cos, sin = rope_tables(tokens.shape[1], self.head_dim)
        x = self.embed(tokens)
        for block, recompute in zip(self.blocks, self.recompute):
            if recompute:
                x = torch.utils.checkpoint.checkpoint(block, x, cos, sin, use_reentrant=False)
            else:
                x = block(x, cos, sin)
        logits = self.output(self.norm(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def make_batch(gen, args):
    """Random but learnable tokens: each sequence starts at a random token and then
    mostly follows a fixed rule (next = 5 * prev + 3 mod vocab, a permutation), with
    10% random tokens mixed in, so the loss visibly falls. Returns (inputs, targets)."""
    b, s, v = args.micro_batch, args.seq_len + 1, args.vocab
    seq = torch.empty(b, s, dtype=torch.long)
    seq[:, 0] = torch.randint(v, (b,), generator=gen)
    noise = torch.rand(b, s, generator=gen) < 0.1
    random_tokens = torch.randint(v, (b, s), generator=gen)
    for t in range(1, s):
        seq[:, t] = torch.where(noise[:, t], random_tokens[:, t], (5 * seq[:, t - 1] + 3) % v)
    return seq[:, :-1], seq[:, 1:]


# ----------------------------------------------------------------------- measurement
def rss_high_water_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # ru_maxrss is KiB on Linux


def estimate_bytes(args, n_params):
    """Cheap pre-flight estimate: fp32 weights + grads + AdamW's two states (sharded
    over dp with ZeRO-1), plus rough activations of one micro-batch."""
    optimizer_states = 2 * 4 * n_params / (args.dp if args.zero == 1 else 1)
    tokens = args.micro_batch * args.seq_len
    per_layer = tokens * (10 * args.hidden + 3 * args.ffn_hidden) * 4 \
        + args.micro_batch * args.heads * args.seq_len ** 2 * 4 * 2  # scores + probs
    n_saved = {"none": args.layers, "selective": (args.layers + 1) // 2, "full": 1}[args.recompute]
    activations = per_layer * n_saved + tokens * args.hidden * 4 * args.layers \
        + tokens * args.vocab * 4 * 3  # logits, softmax, their grad
    return int(4 * n_params * 2 + optimizer_states + activations)


def all_reduce(values, op):
    t = torch.tensor(values, dtype=torch.float64)
    if WORLD > 1:
        dist.all_reduce(t, op=op)
    return t.tolist()


def oom(peak, limit):
    fail(EXIT_CRASH, f"RuntimeError: CPU out of memory: peak {peak} bytes > limit {limit} "
         "bytes (--memory-limit-bytes)", every_rank=True)


def main():
    args = parse_args()
    check_layout(args)  # before any collective, so a bad layout exits on every rank at once
    torch.set_num_threads(args.threads)
    if WORLD > 1:
        dist.init_process_group("gloo")  # reads MASTER_ADDR/PORT, RANK, WORLD_SIZE from torchrun
    if RANK == 0:
        print(f"llama_train: world {WORLD} dp {args.dp} zero {args.zero} micro_batch "
              f"{args.micro_batch} grad_accum {args.grad_accum} global_batch {args.global_batch} "
              f"seq_len {args.seq_len} recompute {args.recompute}", flush=True)

    baseline = rss_high_water_bytes()  # right before the model is built
    torch.manual_seed(args.seed)  # identical init on every rank
    model = Llama(args)
    n_params = sum(p.numel() for p in model.parameters())
    estimate = estimate_bytes(args, n_params)
    if args.memory_limit_bytes and estimate > args.memory_limit_bytes:
        # The *estimate* fired (before step 1); it is identical on every rank, so all exit.
        if LOCAL_RANK == 0:
            print(f"llama_train: estimated memory {estimate} bytes ({n_params} parameters) "
                  "exceeds the limit before step 1", file=sys.stderr, flush=True)
        oom(estimate, args.memory_limit_bytes)

    if WORLD > 1:
        model = nn.parallel.DistributedDataParallel(model)
    if args.zero == 1 and WORLD > 1:  # ZeRO-1: each rank keeps 1/dp of the AdamW states
        optimizer = ZeroRedundancyOptimizer(
            model.parameters(), optimizer_class=torch.optim.AdamW, lr=args.lr)
    else:  # ZeRO 0, or a single process where ZeRO-1 is plain AdamW
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    gen = torch.Generator().manual_seed(args.seed + RANK)  # each rank its own data shard
    metrics = open(args.metrics, "a") if args.metrics and RANK == 0 else None
    tokens_per_step = args.global_batch * args.seq_len
    for step in range(1, args.warmup_steps + args.steps + 1):
        if step == args.hang_at_step and RANK == 0:
            # Test hook: rank 0 stops participating; the others block in their next
            # collective (a real distributed hang, until the gloo timeout of 30 min).
            print(f"llama_train: --hang-at-step {step}: rank 0 sleeps forever",
                  file=sys.stderr, flush=True)
            while True:
                time.sleep(3600)
        batches = [make_batch(gen, args) for _ in range(args.grad_accum)]
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for i, (inputs, targets) in enumerate(batches):
            last = i == args.grad_accum - 1
            # Gradients are all-reduced only on the last micro-batch of the accumulation.
            sync = contextlib.nullcontext() if last or WORLD == 1 else model.no_sync()
            with sync:
                loss = model(inputs, targets)
                (loss / args.grad_accum).backward()
            loss_sum += loss.item()
        optimizer.step()
        elapsed = time.perf_counter() - start  # timed per rank, no barrier

        peak_local = max(0, rss_high_water_bytes() - baseline)
        step_time, peak = all_reduce([elapsed, peak_local], dist.ReduceOp.MAX)
        loss_value = all_reduce([loss_sum / args.grad_accum], dist.ReduceOp.SUM)[0] / WORLD
        peak, finite = int(peak), math.isfinite(loss_value)
        if RANK == 0:
            if metrics:
                metrics.write(json.dumps({"step": step, "tokens": tokens_per_step,
                                          "step_time_s": step_time,
                                          "loss": loss_value if finite else None,
                                          "peak_memory_bytes": peak}) + "\n")
                metrics.flush()
            warm = " (warm-up)" if step <= args.warmup_steps else ""
            print(f"step {step} loss {loss_value:.4f} step_time {step_time:.3f}s tokens/s "
                  f"{tokens_per_step / step_time:.0f} peak_memory {peak}{warm}", flush=True)
        if not finite:  # every rank sees the same all-reduced loss, so all exit together
            fail(EXIT_NAN, f"loss is {loss_value} at step {step}")
        if args.memory_limit_bytes and peak > args.memory_limit_bytes:
            oom(peak, args.memory_limit_bytes)  # the *measured* peak fired, after this step

    if metrics:
        metrics.close()
    # Every rank has passed the last all-reduce; no destroy_process_group (see finish).
    finish(EXIT_OK)


if __name__ == "__main__":
    try:
        main()
    except Exception:  # a crash: report it, exit 1 without the teardown that can hang
        traceback.print_exc()
        finish(EXIT_CRASH)
