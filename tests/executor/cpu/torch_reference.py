"""PyTorch reference for the CPU backend's kernels (run by torch_reference_test).

Usage: /usr/bin/python3 torch_reference.py DIR

DIR/cases.txt lists one "<case> <op>" per line. For each case, the inputs are
DIR/<case>.<name>.f64 (raw little-endian float64) and DIR/<case>.args holds
"<key> <value>" lines; the outputs are written as DIR/<case>.<name>.f64.
Everything is computed in float64 with torch's own ops and autograd, written
from the definitions (not from the C++ code's tiled algorithms).
"""
import math
import os
import sys

import numpy as np
import torch


def read(d, case, name):
    return torch.from_numpy(np.fromfile(os.path.join(d, f"{case}.{name}.f64"),
                                        dtype="<f8"))


def write(d, case, name, t):
    t.detach().contiguous().numpy().astype("<f8").tofile(
        os.path.join(d, f"{case}.{name}.f64"))


def args_of(d, case):
    out = {}
    with open(os.path.join(d, f"{case}.args")) as f:
        for line in f:
            key, value = line.split()
            out[key] = float(value)
    return out


def attention(d, case):
    a = args_of(d, case)
    b, sq, skv = int(a["batch"]), int(a["q_len"]), int(a["kv_len"])
    h, kvh, hd = int(a["heads"]), int(a["kv_heads"]), int(a["head_dim"])
    q = read(d, case, "q").view(b, sq, h, hd).requires_grad_()
    k = read(d, case, "k").view(b, skv, kvh, hd).requires_grad_()
    v = read(d, case, "v").view(b, skv, kvh, hd).requires_grad_()
    q_pos = read(d, case, "q_pos").long()
    k_pos = read(d, case, "k_pos").long()
    dout = read(d, case, "dout").view(b, sq, h, hd)
    # Grouped-query attention: kv head g serves query heads g*r .. g*r+r-1.
    kr = k.repeat_interleave(h // kvh, dim=2).transpose(1, 2)  # b h skv hd
    vr = v.repeat_interleave(h // kvh, dim=2).transpose(1, 2)
    scores = q.transpose(1, 2) @ kr.transpose(-1, -2) / math.sqrt(hd)
    future = k_pos[None, :] > q_pos[:, None]  # sq x skv
    has_key = (~future).any(dim=1)            # sq
    # Rows without a visible key: softmax over all keys, then multiplied by 0
    # (their output and gradients are 0, their lse -inf).
    mask = future & has_key[:, None]
    scores = scores.masked_fill(mask, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    out = (p @ vr) * has_key[None, None, :, None]  # b h sq hd
    out = out.transpose(1, 2)
    lse = torch.where(has_key[None, None, :], torch.logsumexp(scores, dim=-1),
                      torch.tensor(float("-inf"), dtype=torch.float64))
    out.backward(dout)
    write(d, case, "out", out)
    write(d, case, "lse", lse)
    write(d, case, "dq", q.grad)
    write(d, case, "dk", k.grad)
    write(d, case, "dv", v.grad)


def cross_entropy(d, case):
    a = args_of(d, case)
    tokens, vocab = int(a["tokens"]), int(a["vocab"])
    logits = read(d, case, "logits").view(tokens, vocab).requires_grad_()
    targets = read(d, case, "targets").long()
    loss = torch.nn.functional.cross_entropy(logits, targets, reduction="none")
    (loss.sum() * a["grad_scale"]).backward()
    write(d, case, "loss", loss)
    write(d, case, "dlogits", logits.grad)


def rope(d, case):
    # Hugging Face Llama's apply_rotary_pos_emb (rotate_half), in float64.
    a = args_of(d, case)
    t, h, kvh, hd = (int(a["tokens"]), int(a["heads"]), int(a["kv_heads"]),
                     int(a["head_dim"]))
    qkv = read(d, case, "qkv").view(t, (h + 2 * kvh) * hd).requires_grad_()
    pos = read(d, case, "positions")
    inv_freq = 1.0 / (a["theta"] ** (torch.arange(0, hd, 2,
                                                  dtype=torch.float64) / hd))
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]

    def rotate_half(x):
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        return torch.cat((-x2, x1), dim=-1)

    q, k, v = torch.split(qkv, [h * hd, kvh * hd, kvh * hd], dim=1)
    q = q.view(t, h, hd)
    k = k.view(t, kvh, hd)
    q_rot = q * cos + rotate_half(q) * sin
    k_rot = k * cos + rotate_half(k) * sin
    loss = ((q_rot * read(d, case, "dq").view(t, h, hd)).sum() +
            (k_rot * read(d, case, "dk").view(t, kvh, hd)).sum() +
            (v * read(d, case, "dv").view(t, kvh * hd)).sum())
    loss.backward()
    write(d, case, "q", q_rot)
    write(d, case, "k", k_rot)
    write(d, case, "v", v)
    write(d, case, "dqkv", qkv.grad)


def rmsnorm_swiglu(d, case):
    a = args_of(d, case)
    rows, cols = int(a["rows"]), int(a["cols"])
    x = read(d, case, "x").view(rows, cols).requires_grad_()
    w = read(d, case, "weight").requires_grad_()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + a["eps"]) * w
    gate, up = y[:, : cols // 2], y[:, cols // 2:]  # SwiGLU on the norm's output
    out = torch.nn.functional.silu(gate) * up
    out.backward(read(d, case, "dout").view(rows, cols // 2))
    write(d, case, "y", y)
    write(d, case, "out", out)
    write(d, case, "dx", x.grad)
    write(d, case, "dweight", w.grad)


OPS = {"attention": attention, "cross_entropy": cross_entropy, "rope": rope,
       "rmsnorm_swiglu": rmsnorm_swiglu}


def main():
    d = sys.argv[1]
    torch.set_num_threads(1)
    with open(os.path.join(d, "cases.txt")) as f:
        for line in f:
            if line.strip():
                case, op = line.split()
                OPS[op](d, case)


if __name__ == "__main__":
    main()
