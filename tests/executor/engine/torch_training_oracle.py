#!/usr/bin/python3
"""A multi-step training oracle for the executor (PyTorch, float64): reads
the initial weights, the tokens of every step and the optimizer settings
written by torch_training_oracle_test.cc, trains with torch.optim.AdamW and
torch.nn.utils.clip_grad_norm_, and writes each step's loss and gradient norm
(before clipping) and every parameter after the last step.

Usage: torch_training_oracle.py DIR   (DIR/manifest.json in, DIR/out/* out)

Files are raw float64, row-major. Parameter groups: weight decay on every
matrix (embedding, projections, output), none on the RMSNorm weights (names
ending in "norm"). The model is torch_reference.py's Llama (RMSNorm, rotary
embedding, grouped-query causal attention, SwiGLU, untied output).
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import llama_loss  # noqa: E402


def main():
    d = sys.argv[1]
    with open(os.path.join(d, "manifest.json")) as f:
        m = json.load(f)
    p = {}
    for e in m["params"]:
        a = np.fromfile(os.path.join(d, e["file"]), dtype=np.float64)
        if a.size != e["rows"] * e["cols"]:
            sys.exit(f"{e['file']}: {a.size} values, want "
                     f"{e['rows']} x {e['cols']}")
        p[e["name"]] = torch.tensor(a.reshape(e["rows"], e["cols"]),
                                    requires_grad=True)
    norms = [t for n, t in p.items() if n.endswith("norm")]
    matrices = [t for n, t in p.items() if not n.endswith("norm")]
    if len(norms) != 2 * m["model"]["layers"] + 1:
        sys.exit(f"expected {2 * m['model']['layers'] + 1} norm weights, "
                 f"got {len(norms)}")
    o = m["adamw"]
    opt = torch.optim.AdamW(
        [{"params": matrices, "weight_decay": o["weight_decay"]},
         {"params": norms, "weight_decay": 0.0}],
        lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"])
    params = list(p.values())
    losses, grad_norms = [], []
    for step in range(m["steps"]):
        tokens = torch.tensor(m["tokens"][step], dtype=torch.long)
        targets = torch.tensor(m["targets"][step], dtype=torch.long)
        opt.zero_grad()
        loss = llama_loss(p, m["model"], tokens, targets)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(params, m["max_grad_norm"])
        opt.step()
        losses.append(loss.item())
        grad_norms.append(norm.item())

    out = os.path.join(d, "out")
    os.makedirs(out, exist_ok=True)
    np.array(losses, dtype=np.float64).tofile(os.path.join(out, "losses.f64"))
    np.array(grad_norms, dtype=np.float64).tofile(
        os.path.join(out, "grad_norms.f64"))
    for name, t in p.items():
        t.detach().numpy().astype(np.float64).tofile(
            os.path.join(out, name + ".f64"))


if __name__ == "__main__":
    main()
