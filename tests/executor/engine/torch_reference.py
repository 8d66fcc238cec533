#!/usr/bin/python3
"""An independent Llama implementation (PyTorch, float64) for checking the
executor: reads weights and tokens written by torch_reference_test.cc, runs
one forward and backward, writes the mean cross-entropy loss and every
weight's gradient.

Usage: torch_reference.py DIR   (DIR/manifest.json in, DIR/out/* written)

Conventions (as executor/backend.h states them): RMSNorm y = x / sqrt(mean(x^2)
+ eps) * w; rotary embedding in rotate-half form with angle_i = pos *
theta^(-2i/d); grouped-query attention, query head j reading kv head
j // (heads / kv_heads); causal softmax(QK^T / sqrt(d)) V; SwiGLU
silu(x W_gate^T) * (x W_up^T) W_down^T; untied output projection.
"""
import json
import os
import sys

import numpy as np
import torch


def load(d, entry):
    a = np.fromfile(os.path.join(d, entry["file"]), dtype=np.float32)
    return torch.tensor(a.reshape(entry["rows"], entry["cols"]),
                        dtype=torch.float64, requires_grad=True)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, pos, theta):
    # x: [b, s, heads, d]
    d = x.shape[-1]
    half = d // 2
    inv = theta ** (-torch.arange(0, half, dtype=torch.float64) * 2.0 / d)
    ang = pos.to(torch.float64)[:, None] * inv[None, :]  # [s, half]
    cos = ang.cos()[None, :, None, :]
    sin = ang.sin()[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def llama_loss(p, cfg, tokens, targets):
    """Mean cross-entropy of the Llama with weights p (name -> tensor) on
    tokens / targets ([b, s] long tensors); the conventions above."""
    h, heads, kv = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
    hd = h // heads
    eps, theta = cfg["norm_eps"], cfg["rope_theta"]
    b, s = tokens.shape
    pos = torch.arange(s)
    mask = torch.full((s, s), float("-inf"), dtype=torch.float64).triu(1)
    x = p["embed"][tokens]  # [b, s, h]
    for i in range(cfg["layers"]):
        L = lambda n: p[f"layers.{i}.{n}"]
        a = rms_norm(x, L("attn_norm")[0], eps)
        q = (a @ L("wq").T).view(b, s, heads, hd)
        k = (a @ L("wk").T).view(b, s, kv, hd)
        v = (a @ L("wv").T).view(b, s, kv, hd)
        q, k = rope(q, pos, theta), rope(k, pos, theta)
        k = k.repeat_interleave(heads // kv, dim=2)
        v = v.repeat_interleave(heads // kv, dim=2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / (hd ** 0.5) + mask
        o = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v)
        x = x + o.reshape(b, s, heads * hd) @ L("wo").T
        a = rms_norm(x, L("mlp_norm")[0], eps)
        g = torch.nn.functional.silu(a @ L("w_gate").T) * (a @ L("w_up").T)
        x = x + g @ L("w_down").T
    x = rms_norm(x, p["final_norm"][0], eps)
    logits = x @ p["output"].T
    return torch.nn.functional.cross_entropy(
        logits.reshape(b * s, -1), targets.reshape(b * s))


def main():
    d = sys.argv[1]
    with open(os.path.join(d, "manifest.json")) as f:
        m = json.load(f)
    p = {e["name"]: load(d, e) for e in m["params"]}
    tokens = torch.tensor(m["tokens"], dtype=torch.long)    # [b, s]
    targets = torch.tensor(m["targets"], dtype=torch.long)  # [b, s]
    loss = llama_loss(p, m["model"], tokens, targets)
    loss.backward()

    out = os.path.join(d, "out")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "loss.json"), "w") as f:
        json.dump({"loss": loss.item()}, f)
    for name, t in p.items():
        t.grad.numpy().astype(np.float32).tofile(os.path.join(out, name + ".grad"))


if __name__ == "__main__":
    main()
