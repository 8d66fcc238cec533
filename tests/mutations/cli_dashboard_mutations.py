#!/usr/bin/env python3
"""Issue 30's deliberate breaks: small mutations of the names, exports,
tables, report and dashboard, one at a time, each judged by the tests that
should catch it (a gtest filter per binary keeps a run to a minute or two).
The tree is restored after each one; a mutation that survives fails the
run.

    tests/mutations/cli_dashboard_mutations.py [--build build] [--only NAME]

Each mutation is (name, file, text to find, replacement, [(test binary,
gtest filter), ...]); the text must occur exactly once.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PLAN = ("cli_test", "PlanCommandTest.*:PredictCommandTest.*")
NAMES = ("core_test", "KnownNames*")
EXPORT = ("export_test", "LayoutExport*:FrameworkOption*")
OUTPUT = ("cli_output_test", "*")
REPORT = ("cli_service_test", "StudyReport*:TrialTable*")
SERVICE = ("cli_service_test", "ServiceCommands*")
LIVE = ("cli_planner_test", "*HistoryCommandsReadTheStoreFile*")
DASH = ("dashboard_test", "*")
BROWSER = ("dashboard_browser_test", "*Redraws*")

MUTATIONS = [
    ("names are compared case-sensitively", "core/known_names.cc",
     "if (absl::EqualsIgnoreCase(given, name)) return name;",
     "if (given == name) return name;", [NAMES]),
    ("no prefix suggestions", "core/known_names.cc",
     "if (absl::StartsWith(name, folded) || absl::StartsWith(folded, name)) {",
     "if (false) {", [NAMES, PLAN]),
    ("a preset's case matters again", "core/model.cc",
     "if (absl::EqualsIgnoreCase(name, p.name)) {", "if (name == p.name) {",
     [PLAN]),
    ("exports take the plan's stack as the target's", "cli/export_flag.cc",
     "return requested() && workload.training.stack != TargetStack();",
     "return false;", [PLAN]),
    ("export refusals exit 1 again", "cli/export_flag.cc",
     "return absl::InvalidArgumentError(\n        absl::StrCat(\"--export: \", e.status().message()));",
     "return e.status();", [PLAN]),
    ("Megatron's FSDP asks for one connection too", "export/megatron_export.cc",
     "if (model_parallel && old_gpus && !fsdp) {",
     "if (model_parallel && old_gpus) {", [EXPORT]),
    ("no DeepSpeed recompute note", "export/deepspeed_export.cc",
     "if (in.layout.recompute == Recompute::kFull) {",
     "if (false) {", [EXPORT, PLAN]),
    ("notes not written into the file", "export/megatron_export.cc",
     "absl::StrAppend(&out, NoteComments(MegatronNotes(in), \"# \"));", "",
     [EXPORT, PLAN]),
    ("a misspelled Megatron flag", "export/megatron_export.cc",
     "arg(\"--norm-epsilon\", m.norm_eps);", "arg(\"--norm-eps\", m.norm_eps);",
     [EXPORT]),
    ("a misspelled torchtitan field", "export/torchtitan_export.cc",
     "\"parallelism.enable_sequence_parallel = \"",
     "\"parallelism.enable_sequence_parallelism = \"", [EXPORT]),
    ("every knob looks constant", "cli/plan_output.cc",
     "constant[k] = constant[k] && knobs[k].cell(e.layout) ==",
     "constant[k] = true || knobs[k].cell(e.layout) ==", [PLAN]),
    ("fp8 MFU over the bf16 peak", "cli/plan_output.cc",
     "  return mfu_bf16 * w.cluster.gpu.peak_dense_tflops /\n         w.cluster.gpu.peak_fp8_tflops;",
     "  return mfu_bf16;", [PLAN]),
    ("layouts cut instead of wrapped", "cli/text_table.cc",
     "if (columns_[c].wrap && DisplayWidth(cells[c]) > widths[c]) {",
     "if (false) {", [OUTPUT, REPORT]),
    ("-o wide cuts reasons again", "cli/trial_table.cc",
     "max_width > 0 ? Truncate(t.reason(), kReasonWidth) : t.reason(),",
     "Truncate(t.reason(), kReasonWidth),", [REPORT]),
    ("no --db hint", "cli/study_source.cc",
     "answer.status().message(), \"; \", kNoPlannerHint));",
     "answer.status().message()));", [SERVICE]),
    ("--db prints the planner's path", "cli/study_source.cc",
     "if (r.ok()) r->set_history_db(path_);", "", [LIVE]),
    ("every coefficient called fitted", "cli/report_calibration.cc",
     "  return std::abs(value - default_value) > 1e-9 * std::max(scale, 1e-300);",
     "  return true;", [REPORT]),
    ("parallel coordinates drop the ZeRO stage", "cli/report_plots.cc",
     "{\"zero\", absl::StrCat(l.zero())},", "{\"zero\", \"0\"},", [REPORT]),
    ("identical curves not said", "cli/report_plots.cc",
     "if (same_values(*first, t)) {", "if (false) {", [REPORT]),
    ("agents read the dashboard", "dashboard/dashboard_access.cc",
     "    case Role::kAgent:\n      return absl::PermissionDeniedError(",
     "    case Role::kAgent:\n      return absl::OkStatus();\n      return absl::PermissionDeniedError(",
     [DASH]),
    ("the dashboard takes POST", "dashboard/dashboard_server.cc",
     "if (method != \"GET\" && method != \"HEAD\") {",
     "if (method == \"OPTIONS\") {", [DASH]),
    ("a wait returns at once", "dashboard/dashboard_server.cc",
     "while (version.ok() && *version == known && absl::Now() < until &&",
     "while (false && version.ok() && *version == known && absl::Now() < until &&",
     [DASH]),
    ("the page never redraws", "dashboard/dashboard_page.cc",
     "      if (w.version !== state.version) {",
     "      if (false) {", [BROWSER]),
]


def run(cmd, **kw):
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    results = []
    binaries = sorted({b for *_, tests in MUTATIONS for b, _ in tests})
    for name, path, find, repl, tests in MUTATIONS:
        if args.only and args.only not in name:
            continue
        full = os.path.join(ROOT, path)
        original = open(full).read()
        if original.count(find) != 1:
            results.append((name, "NOT APPLIED (text not found once)"))
            continue
        try:
            open(full, "w").write(original.replace(find, repl))
            b = run(["nice", "-n", "10", "ninja", "-C", args.build] +
                    sorted({t for t, _ in tests}))
            if b.returncode != 0:
                results.append((name, "killed (does not build)"))
                continue
            failed = []
            for binary, gtest_filter in tests:
                exe = run(["find", args.build, "-name", binary, "-type",
                           "f"]).stdout.split()
                if not exe:
                    continue
                r = run([exe[0], "--gtest_filter=" + gtest_filter],
                        timeout=900)
                if r.returncode != 0:
                    failed.append(binary)
            results.append((name, "killed by " + ", ".join(failed) if failed
                            else "SURVIVED"))
        finally:
            open(full, "w").write(original)
        print(f"{name}: {results[-1][1]}", flush=True)
    run(["ninja", "-C", args.build] + binaries)
    width = max(len(n) for n, _ in results)
    for name, outcome in results:
        print(f"{name:<{width}}  {outcome}")
    return 1 if any(o != "killed" and not o.startswith("killed")
                    for _, o in results) else 0


if __name__ == "__main__":
    sys.exit(main())
