#!/usr/bin/env python3
"""The table of bench/cuda/run_1b.sh: Tessera's CUDA backend against PyTorch.

Reads, for each micro-batch size N, the JSON results in --results-dir:
  tessera_mbN.json        tessera-trial --backend cuda (core/trial_result.h's JSON)
  torch_eager_mbN.json    torch_llama.py --mode eager
  torch_compile_mbN.json  torch_llama.py --mode compile
and prints a Markdown table of tokens/s and MFU for each and Tessera's
tokens/s over each PyTorch mode's, then writes it with the date, the device
and the configuration to --out (RESULTS.md). A missing or failed run is a
dash, with its reason in the notes under the table.

  results_table.py --results-dir /tmp/r --micro-batches 1,2,4,8 \
      --config "layers 16, hidden 2048, ..." --out bench/cuda/RESULTS.md
"""

import argparse
import datetime
import json
import os
import sys

IMPLS = [("tessera", "Tessera"), ("torch_eager", "torch eager"),
         ("torch_compile", "torch.compile")]


def load(path):
    """The run's JSON, or None when the file is missing or unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def ok(run):
    return run is not None and run.get("status") == "ok"


def fmt_tokens(run):
    return "%.0f" % run["tokens_per_s"] if ok(run) else "—"


def fmt_mfu(run):
    if not ok(run) or run.get("mfu") is None:
        return "—"
    return "%.1f%%" % (100.0 * run["mfu"])


def fmt_ratio(a, b):
    if not (ok(a) and ok(b)) or not b["tokens_per_s"]:
        return "—"
    return "%.2fx" % (a["tokens_per_s"] / b["tokens_per_s"])


def build_table(results_dir, micro_batches):
    """(markdown lines, notes, device) for the runs found."""
    header = ["micro-batch"]
    for _, label in IMPLS:
        header += [label + " tokens/s", label + " MFU"]
    header += ["Tessera / eager", "Tessera / compile"]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" for _ in header) + "|"]
    notes, device = [], None
    for mb in micro_batches:
        runs = {key: load(os.path.join(results_dir, "%s_mb%d.json" % (key, mb)))
                for key, _ in IMPLS}
        row = [str(mb)]
        for key, label in IMPLS:
            run = runs[key]
            row += [fmt_tokens(run), fmt_mfu(run)]
            if run is None:
                notes.append("micro-batch %d, %s: no result" % (mb, label))
            elif not ok(run):
                notes.append("micro-batch %d, %s: %s: %s" %
                             (mb, label, run.get("status", "?"),
                              run.get("reason", "")))
            elif device is None and run.get("device"):
                device = run["device"]
        row += [fmt_ratio(runs["tessera"], runs["torch_eager"]),
                fmt_ratio(runs["tessera"], runs["torch_compile"])]
        lines.append("| " + " | ".join(row) + " |")
    return lines, notes, device


def render(lines, notes, device, config, date, command):
    out = ["# Tessera CUDA backend vs PyTorch: a ~1B Llama training step", "",
           "- date: %s" % date,
           "- device: %s" % (device or "unknown (no successful run)"),
           "- model and step: %s" % config,
           "- command: `%s`" % command, "",
           "Tokens/s of whole optimizer steps (median of the measured steps) "
           "and MFU against the dense bf16 peak, model FLOPs as in "
           "core/model_flops.h (no recomputation, causal attention counted "
           "whole).", ""]
    out += lines
    if notes:
        out += ["", "Notes:"] + ["- " + n for n in notes]
    return "\n".join(out) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results-dir", required=True)
    p.add_argument("--micro-batches", required=True,
                   help="comma-separated, e.g. 1,2,4,8")
    p.add_argument("--config", default="")
    p.add_argument("--command", default="bench/cuda/run_1b.sh")
    p.add_argument("--date", default=None,
                   help="default: now, UTC, ISO 8601")
    p.add_argument("--out", default=None, help="also write the page here")
    args = p.parse_args(argv)
    try:
        micro_batches = [int(x) for x in args.micro_batches.split(",") if x]
    except ValueError:
        p.error("--micro-batches: not a list of integers: %s" %
                args.micro_batches)
    date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")
    lines, notes, device = build_table(args.results_dir, micro_batches)
    page = render(lines, notes, device, args.config, date, args.command)
    sys.stdout.write(page)
    if args.out:
        with open(args.out, "w") as f:
            f.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
