#!/usr/bin/env python3
"""The layer rule: a source file includes only its own folder's headers and
those of folders below it in LAYERS (docs/architecture.md draws the same
order). A lower folder that includes a higher one is a violation, named with
file:line; so is a source folder missing from LAYERS (place it), and an entry
of KNOWN_EXCEPTIONS that no longer occurs (delete it: the list only shrinks).

  tests/architecture/check_layers.py [--root DIR]   check the tree (exit 1 on a violation)
  tests/architecture/check_layers.py --self-test     the checker against trees built to break it

tests/ and bench/ sit above everything and are not checked; third_party/ and
generated code (tessera/v1/*.pb.h) are not ours and not checked.
"""
import argparse
import os
import re
import sys
import tempfile

# Bottom to top. A file belongs to the longest entry that is a folder prefix
# of its path ("costmodel/comm/fsdp_comm.cc" -> "costmodel/comm";
# "costmodel/step_model.cc" -> "costmodel"; "db/internal/x.cc" -> "db").
LAYERS = [
    "core",                   # domain types: model, GPU, cluster, layout
    "proto",                  # wire format <-> core types
    "costmodel/calibration",  # the coefficients every term reads, their file, measured collectives
    "costmodel/stacks",       # training stacks as data
    "costmodel/pipeline",     # stage sizes, schedules
    "costmodel/memory",       # bytes per GPU
    "costmodel/compute",      # FLOPs and kernel times
    "costmodel/comm",         # NCCL and each parallelism's traffic
    "costmodel/power",        # watts, energy, the full run
    "costmodel",              # one step assembled, PredictLayout
    "costmodel/fit",          # coefficients fitted to trials, a prediction's spread
    "costmodel/search",       # the layout search, Pareto front, GPU count
    "costmodel/published",    # the model against published measurements
    "export",                 # a layout as a framework's configuration
    "executor",               # the executor's shared parts
    "executor/comm",
    "executor/engine",
    "executor/cpu",
    "executor/trial",         # what every backend's trial shares
    "executor/cuda",
    "executor/tessera_trial", # the backend table, the runner, tessera-trial
    "db",                     # the SQLite trial store
    "service/metrics",        # the daemon's Prometheus endpoint
    "service",                # tessera-planner: studies, leases, halving, recommendation
    "replay",                 # studies replayed against a measured sweep
    "agents",                 # tessera-agent
    "cli",                    # tessera
    "dashboard",              # the report's plots
    "service/bin",            # tessera-planner's main: the service and the dashboard
]

# (from, to): includes that break the rule today, each with why it is left
# and what removes it. Never add one to make a change pass.
KNOWN_EXCEPTIONS = {}

# Folders a unit must not include although they sit below it: the agent runs
# on GPU nodes and carries neither the cost model, the exporters, the store
# nor the daemon (the planner puts what it needs into the assignment, e.g.
# the framework configuration: service/framework_config.h).
FORBIDDEN = {
    "agents": ("costmodel", "export", "db", "service"),
}

SKIP_TOP = {"tests", "bench", "third_party", "build", "build-tsa", "deploy",
            "docs", "quickstart", "gpukit", ".git", ".ci"}
SOURCE = re.compile(r"\.(cc|h|cu|cuh|inc)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def unit_of(path):
    """The LAYERS entry `path` (a repository-relative file path) belongs to."""
    folder = os.path.dirname(path)
    best = None
    for unit in LAYERS:
        if folder == unit or folder.startswith(unit + "/"):
            if best is None or len(unit) > len(best):
                best = unit
    return best


def source_files(root):
    for top in sorted(os.listdir(root)):
        if top in SKIP_TOP or not os.path.isdir(os.path.join(root, top)):
            continue
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if SOURCE.search(name):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def check(root, exceptions=None):
    """Returns (violations, stale exceptions) as lists of strings."""
    exceptions = KNOWN_EXCEPTIONS if exceptions is None else exceptions
    rank = {unit: i for i, unit in enumerate(LAYERS)}
    violations, seen = [], set()
    for path in source_files(root):
        src = unit_of(path)
        if src is None:
            violations.append(f"{path}: its folder is not in the layer table "
                              "(tests/architecture/check_layers.py LAYERS): place it")
            continue
        with open(os.path.join(root, path), errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m or not os.path.isfile(os.path.join(root, m.group(1))):
                    continue  # system, third-party or generated header
                dst = unit_of(m.group(1))
                if dst is None:
                    continue
                banned = [f for f in FORBIDDEN.get(src, ())
                          if dst == f or dst.startswith(f + "/")]
                if banned:
                    violations.append(
                        f"{path}:{number}: {src}/ includes {m.group(1)}, from "
                        f"{dst}/, which {src}/ must not use (FORBIDDEN)")
                    continue
                if rank[dst] <= rank[src]:
                    continue
                if (src, dst) in exceptions:
                    seen.add((src, dst))
                    continue
                violations.append(
                    f"{path}:{number}: {src}/ includes {m.group(1)}, from "
                    f"{dst}/, a layer above it")
    stale = [f"KNOWN_EXCEPTIONS ({a}, {b}) no longer occurs: delete it"
             for (a, b) in exceptions if (a, b) not in seen]
    return violations, stale


def self_test():
    """The checker on small trees: each broken one must be caught."""
    def tree(files):
        root = tempfile.mkdtemp(prefix="layers-")
        for path, text in files.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        return root

    def violations_of(files):
        v, _ = check(tree(files))
        return [x for x in v if "not in the layer table" in x or "a layer above" in x
                or "must not use" in x]

    failures = []
    # Downward and same-folder includes are allowed.
    ok = {"core/a.h": "", "costmodel/comm/b.h": '#include "core/a.h"\n',
          "costmodel/comm/c.cc": '#include "costmodel/comm/b.h"\n'}
    if violations_of(ok):
        failures.append(f"a legal tree was refused: {violations_of(ok)}")
    # A lower folder including a higher one is caught, with file and line.
    up = {"core/a.h": '\n#include "costmodel/comm/b.h"\n', "costmodel/comm/b.h": ""}
    v = violations_of(up)
    if not any(x.startswith("core/a.h:2:") for x in v):
        failures.append(f"core including costmodel/comm was not caught: {v}")
    # The root of a folder is below its later subfolders.
    root_up = {"costmodel/step.h": '#include "costmodel/search/s.h"\n',
               "costmodel/search/s.h": ""}
    if not violations_of(root_up):
        failures.append("costmodel/ including costmodel/search was not caught")
    # A forbidden folder is caught although it sits below.
    banned = {"agents/a.cc": '#include "costmodel/search/s.h"\n',
              "costmodel/search/s.h": ""}
    if not any("must not use" in x for x in violations_of(banned)):
        failures.append("agents including costmodel/search was not caught")
    # A folder outside the table is named.
    unknown = {"newroom/x.cc": '#include "core/a.h"\n', "core/a.h": ""}
    if not any("newroom/x.cc" in x for x in violations_of(unknown)):
        failures.append("a folder missing from the table was not named")
    # A listed exception lets its include pass; one that no longer occurs
    # is stale.
    listed = {("core", "proto"): "test"}
    v, stale = check(tree({"core/a.h": '#include "proto/p.h"\n',
                           "proto/p.h": ""}), listed)
    if v or stale:
        failures.append(f"a listed exception was not honoured: {v} {stale}")
    _, stale = check(tree({"core/a.h": ""}), listed)
    if len(stale) != 1:
        failures.append(f"a stale exception was not reported: {stale}")
    for f in failures:
        print("self-test:", f)
    print("self-test:", "passed" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    violations, stale = check(os.path.abspath(args.root))
    for v in violations + stale:
        print(v)
    if violations or stale:
        print(f"layer rule: {len(violations)} violations, {len(stale)} stale exceptions "
              "(docs/architecture.md)")
        return 1
    print(f"layer rule: every include goes down ({len(LAYERS)} layers, "
          f"{len(KNOWN_EXCEPTIONS)} known exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
