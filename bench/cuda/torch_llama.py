#!/usr/bin/env python3
"""The Llama model and training step of Tessera's executor, in PyTorch.

The baseline that bench/cuda/run_1b.sh measures Tessera's CUDA backend
against: the same model (token embedding, RMSNorm, a fused QKV projection,
rotate-half RoPE, grouped-query causal attention, SwiGLU with a fused gate/up
projection, final RMSNorm, untied output projection, mean cross-entropy) and
the same step (bf16 autocast over fp32 master weights, AdamW lr 3e-4, betas
0.9/0.95, eps 1e-8, weight decay 0.1 on matrices), in eager mode or under
torch.compile. Attention is F.scaled_dot_product_attention (flash or cuDNN
kernels) where this PyTorch has it, else an explicit softmax.

MFU uses Tessera's model FLOPs (core/model_flops.h): per token, forward
2 * matmul weights + 4 * seq_len * heads * head_dim * layers; training is
3x forward; recomputation is not counted.

Benchmark (one GPU):
  torch_llama.py --layers 16 --hidden 2048 --heads 16 --kv-heads 8 \
      --ffn 5632 --vocab 32000 --seq-len 2048 --micro-batch 4 \
      --warmup 3 --steps 10 --mode eager --json torch_eager_mb4.json
Self-test on the CPU (tiny config; exit 77 when torch is missing):
  torch_llama.py --selftest
"""

import argparse
import json
import math
import statistics
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:  # the self-test reports a skip; benchmarks need torch
    torch = None

SKIP_EXIT_CODE = 77

# Dense bf16 peaks by device name (as executor/cuda/gpu_peak.cc): used when
# the caller passes no --peak-tflops.
PEAKS = [
    (("H100", "PCIE"), 756.0),
    (("H100", "NVL"), 835.0),
    (("H200", "NVL"), 835.5),
    (("H200",), 989.4),
    (("GH200",), 989.4),
    (("H100",), 989.4),
    (("A100",), 312.0),
    (("L40S",), 362.05),
]


def peak_tflops_for(device_name):
    upper = device_name.upper()
    for words, tflops in PEAKS:
        if all(w in upper for w in words):
            return tflops
    return None


class Config:
    def __init__(self, layers, hidden, heads, kv_heads, ffn, vocab,
                 rope_theta=10000.0, norm_eps=1e-5):
        assert hidden % heads == 0 and heads % kv_heads == 0
        self.layers, self.hidden, self.heads = layers, hidden, heads
        self.kv_heads, self.ffn, self.vocab = kv_heads, ffn, vocab
        self.rope_theta, self.norm_eps = rope_theta, norm_eps
        self.head_dim = hidden // heads

    def param_count(self):
        # core/model.cc's ParamCount for a SwiGLU, untied model.
        kv_dim = self.kv_heads * self.head_dim
        per_layer = (2 * self.hidden * self.hidden + 2 * self.hidden * kv_dim +
                     3 * self.hidden * self.ffn + 2 * self.hidden)
        return (self.layers * per_layer + 2 * self.vocab * self.hidden +
                self.hidden)


def model_flops_per_step(cfg, batch, seq_len):
    """core/model_flops.cc's ModelFlopsPerStep."""
    kv_dim = cfg.kv_heads * cfg.head_dim
    matmul = (cfg.layers * (2 * cfg.hidden * cfg.hidden +
                            2 * cfg.hidden * kv_dim +
                            3 * cfg.hidden * cfg.ffn) +
              cfg.vocab * cfg.hidden)
    attention = 4.0 * seq_len * cfg.heads * cfg.head_dim * cfg.layers
    return 3.0 * (2.0 * matmul + attention) * batch * seq_len


if torch is not None:

    def rms_norm(x, weight, eps):
        # In float32 (as the CUDA kernel), the result in x's dtype.
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        return (y * weight.float()).to(x.dtype)

    class RMSNorm(nn.Module):
        def __init__(self, dim, eps):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))
            self.eps = eps
            fused = getattr(F, "rms_norm", None)
            self.fused = fused

        def forward(self, x):
            if self.fused is not None:
                return self.fused(x, (x.shape[-1],), self.weight, self.eps)
            return rms_norm(x, self.weight, self.eps)

    def rope_tables(seq_len, head_dim, theta, device):
        """cos, sin [seq_len, head_dim / 2] of position * theta^(-2i/d),
        in float64 then float32 (positions reach 1e5 radians)."""
        half = head_dim // 2
        i = torch.arange(half, dtype=torch.float64)
        inv_freq = theta ** (-2.0 * i / head_dim)
        angles = torch.arange(seq_len, dtype=torch.float64)[:, None] * inv_freq
        return (angles.cos().float().to(device), angles.sin().float().to(device))

    def apply_rope(x, cos, sin):
        """Rotate-half RoPE of x [batch, seq, heads, head_dim]."""
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        c = cos[None, :, None, :].to(x.dtype)
        s = sin[None, :, None, :].to(x.dtype)
        return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)

    def naive_attention(q, k, v):
        """Causal GQA attention with an explicit softmax; q [B, H, S, D],
        k, v [B, KV, S, D]."""
        group = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        s = q.shape[2]
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        return torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v

    def sdpa_attention(q, k, v):
        group = q.shape[1] // k.shape[1]
        if group > 1:
            try:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                      enable_gqa=True)
            except TypeError:  # PyTorch < 2.5: no enable_gqa
                k = k.repeat_interleave(group, dim=1)
                v = v.repeat_interleave(group, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    HAVE_SDPA = hasattr(F, "scaled_dot_product_attention")

    class Block(nn.Module):
        def __init__(self, cfg, attention):
            super().__init__()
            self.cfg = cfg
            self.attention = attention
            h, hd = cfg.hidden, cfg.head_dim
            self.attn_norm = RMSNorm(h, cfg.norm_eps)
            self.wqkv = nn.Linear(h, (cfg.heads + 2 * cfg.kv_heads) * hd,
                                  bias=False)
            self.wo = nn.Linear(cfg.heads * hd, h, bias=False)
            self.mlp_norm = RMSNorm(h, cfg.norm_eps)
            self.w_gate_up = nn.Linear(h, 2 * cfg.ffn, bias=False)
            self.w_down = nn.Linear(cfg.ffn, h, bias=False)

        def forward(self, x, cos, sin):
            cfg = self.cfg
            b, s, _ = x.shape
            hd = cfg.head_dim
            qkv = self.wqkv(self.attn_norm(x))
            q, k, v = qkv.split([cfg.heads * hd, cfg.kv_heads * hd,
                                 cfg.kv_heads * hd], dim=-1)
            q = apply_rope(q.view(b, s, cfg.heads, hd), cos, sin)
            k = apply_rope(k.view(b, s, cfg.kv_heads, hd), cos, sin)
            v = v.view(b, s, cfg.kv_heads, hd)
            o = self.attention(q.transpose(1, 2), k.transpose(1, 2),
                               v.transpose(1, 2))
            x = x + self.wo(o.transpose(1, 2).reshape(b, s, cfg.heads * hd))
            gate, up = self.w_gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
            return x + self.w_down(F.silu(gate) * up)

    class Llama(nn.Module):
        def __init__(self, cfg, attention=None, max_seq_len=4096):
            super().__init__()
            if attention is None:
                attention = sdpa_attention if HAVE_SDPA else naive_attention
            self.cfg = cfg
            # RoPE tables once (buffers follow .to(device); torch.compile
            # sees constants, not a host computation per step).
            cos, sin = rope_tables(max_seq_len, cfg.head_dim, cfg.rope_theta,
                                   "cpu")
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
            self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
            self.blocks = nn.ModuleList(
                [Block(cfg, attention) for _ in range(cfg.layers)])
            self.norm = RMSNorm(cfg.hidden, cfg.norm_eps)
            self.out = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
            for p in self.parameters():
                if p.dim() == 2:
                    nn.init.normal_(p, std=0.02)

        def forward(self, tokens, targets):
            s = tokens.shape[1]
            cos, sin = self.rope_cos[:s], self.rope_sin[:s]
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x, cos, sin)
            logits = self.out(self.norm(x))
            return F.cross_entropy(logits.float().view(-1, self.cfg.vocab),
                                   targets.reshape(-1))

    def make_optimizer(model, lr=3e-4):
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": 0.1},
                  {"params": no_decay, "weight_decay": 0.0}]
        kwargs = dict(lr=lr, betas=(0.9, 0.95), eps=1e-8)
        if next(model.parameters()).is_cuda:
            try:
                return torch.optim.AdamW(groups, fused=True, **kwargs)
            except (TypeError, RuntimeError):
                pass
        return torch.optim.AdamW(groups, **kwargs)

    def train_step(model, opt, tokens, targets, autocast):
        """One optimizer step; returns the loss (a tensor, not synced)."""
        if autocast:
            with torch.autocast(device_type=tokens.device.type,
                                dtype=torch.bfloat16):
                loss = model(tokens, targets)
        else:
            loss = model(tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()


def benchmark(args):
    if torch is None:
        return {"status": "failed", "reason": "torch is not importable"}
    device = torch.device(args.device)
    cfg = Config(args.layers, args.hidden, args.heads, args.kv_heads,
                 args.ffn, args.vocab)
    torch.manual_seed(1234)
    model = Llama(cfg, max_seq_len=args.seq_len).to(device)
    opt = make_optimizer(model)
    step_model = torch.compile(model) if args.mode == "compile" else model
    gen = torch.Generator(device="cpu").manual_seed(7)
    shape = (args.micro_batch, args.seq_len + 1)
    losses, times = [], []
    for i in range(args.warmup + args.steps):
        sample = torch.randint(0, cfg.vocab, shape, generator=gen).to(device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        loss = train_step(step_model, opt, sample[:, :-1], sample[:, 1:],
                          autocast=device.type == "cuda")
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        losses.append(float(loss))
    measured = times[args.warmup:]
    step_s = statistics.median(measured)
    tokens_per_s = args.micro_batch * args.seq_len / step_s
    flops = model_flops_per_step(cfg, args.micro_batch, args.seq_len)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    peak = args.peak_tflops or peak_tflops_for(name)
    return {
        "status": "ok",
        "impl": "torch-" + args.mode,
        "device": name,
        "torch": torch.__version__,
        "attention": "sdpa" if HAVE_SDPA else "naive",
        "micro_batch": args.micro_batch,
        "seq_len": args.seq_len,
        "params": cfg.param_count(),
        "step_time_s": step_s,
        "step_times_s": times,
        "tokens_per_s": tokens_per_s,
        "tflops_per_gpu": flops / step_s / 1e12,
        "peak_tflops": peak,
        "mfu": flops / step_s / 1e12 / peak if peak else None,
        "peak_memory_bytes": (torch.cuda.max_memory_allocated(device)
                              if device.type == "cuda" else None),
        "loss": losses,
    }


def selftest():
    """CPU checks of the model against itself; exit 0 (pass), 1, or 77 (no
    torch)."""
    if torch is None:
        print("SKIP: torch is not importable")
        return SKIP_EXIT_CODE
    torch.manual_seed(0)
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    # 1. FLOPs and parameters of the benchmark's model, by hand.
    big = Config(16, 2048, 16, 8, 5632, 32000)
    check(big.param_count() == 886_114_304, "1B config has 886,114,304 params")
    check(model_flops_per_step(big, 1, 2048) == 5_728_370_688 * 2048,
          "model FLOPs per token 5,728,370,688 at seq 2048")

    cfg = Config(layers=2, hidden=64, heads=4, kv_heads=2, ffn=96, vocab=128)
    seq, batch = 16, 3
    tokens = torch.randint(0, cfg.vocab, (batch, seq + 1))

    # 2. RoPE: position 0 is the identity and rotations keep pair norms.
    cos, sin = rope_tables(seq, cfg.head_dim, cfg.rope_theta, "cpu")
    x = torch.randn(batch, seq, cfg.heads, cfg.head_dim)
    y = apply_rope(x, cos, sin)
    check(torch.allclose(y[:, 0], x[:, 0]), "RoPE at position 0 is identity")
    half = cfg.head_dim // 2
    norms = lambda t: (t[..., :half] ** 2 + t[..., half:] ** 2)
    check(torch.allclose(norms(x), norms(y), atol=1e-5),
          "RoPE keeps each rotated pair's norm")

    # 3. The model against itself: the batched attention (SDPA when this
    # PyTorch has it, else the explicit softmax) against a per-head loop,
    # loss and gradients.
    def loop_attention(q, k, v):
        group = q.shape[1] // k.shape[1]
        out = torch.zeros_like(q)
        for bi in range(q.shape[0]):
            for h in range(q.shape[1]):
                for i in range(q.shape[2]):
                    kk = k[bi, h // group, : i + 1]
                    vv = v[bi, h // group, : i + 1]
                    w = torch.softmax(
                        (kk @ q[bi, h, i]) / math.sqrt(q.shape[-1]), dim=0)
                    out[bi, h, i] = w @ vv
        return out

    torch.manual_seed(1)
    model = Llama(cfg)
    ref = Llama(cfg, attention=loop_attention)
    ref.load_state_dict(model.state_dict())
    loss = model(tokens[:, :-1], tokens[:, 1:])
    loss_ref = ref(tokens[:, :-1], tokens[:, 1:])
    check(abs(loss.item() - math.log(cfg.vocab)) < 0.3,
          "loss at init is about log(vocab): %.4f" % loss.item())
    check(abs(loss.item() - loss_ref.item()) < 1e-5,
          "batched attention loss == per-head loop (%.3g)"
          % abs(loss.item() - loss_ref.item()))
    loss.backward()
    loss_ref.backward()
    worst = max((p.grad - q.grad).abs().max().item()
                for p, q in zip(model.parameters(), ref.parameters()))
    check(worst < 1e-5, "gradients equal the per-head loop's (%.3g)" % worst)
    if HAVE_SDPA:
        naive = Llama(cfg, attention=naive_attention)
        naive.load_state_dict(model.state_dict())
        l2 = naive(tokens[:, :-1], tokens[:, 1:])
        check(abs(l2.item() - loss.item()) < 1e-5, "SDPA == explicit softmax")

    # 4. Training moves the loss down (memorising one batch).
    torch.manual_seed(2)
    model = Llama(cfg)
    opt = make_optimizer(model, lr=3e-3)
    first = last = None
    for _ in range(30):
        l = train_step(model, opt, tokens[:, :-1], tokens[:, 1:],
                       autocast=False).item()
        first = l if first is None else first
        last = l
    check(last < first - 0.5, "30 AdamW steps: loss %.3f -> %.3f" % (first, last))
    # bf16 autocast on the CPU runs the same model.
    l_bf16 = train_step(model, opt, tokens[:, :-1], tokens[:, 1:],
                        autocast=True).item()
    check(math.isfinite(l_bf16), "a bf16-autocast step is finite")

    # 5. The peak table.
    check(peak_tflops_for("NVIDIA H100 80GB HBM3") == 989.4, "H100 SXM peak")
    check(peak_tflops_for("NVIDIA H100 PCIe") == 756.0, "H100 PCIe peak")
    check(peak_tflops_for("NVIDIA GeForce RTX 4090") is None, "unknown: none")
    return 1 if failures else 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--selftest", action="store_true")
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=5632)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--seq-len", type=int, default=2048)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--mode", choices=["eager", "compile"], default="eager")
    p.add_argument("--device", default="cuda")
    p.add_argument("--peak-tflops", type=float, default=None)
    p.add_argument("--json", default="-")
    args = p.parse_args(argv)
    if args.selftest:
        return selftest()
    try:
        result = benchmark(args)
    except Exception as e:  # an OOM or a compile failure is a result too
        result = {"status": "failed", "impl": "torch-" + args.mode,
                  "micro_batch": args.micro_batch,
                  "reason": "%s: %s" % (type(e).__name__, e)}
    text = json.dumps(result, indent=2) + "\n"
    if args.json == "-":
        sys.stdout.write(text)
    else:
        with open(args.json, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
