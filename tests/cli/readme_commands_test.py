#!/usr/bin/env python3
"""The documentation's `tessera ...` command lines parse as pasted.

Every command line in the code blocks of README.md and docs/*.md (indented four spaces) that
runs `tessera` or `build/cli/tessera`, with its backslash continuations and
without a trailing `# comment`, is run with the planner unreachable
(TESSERA_PLANNER=127.0.0.1:1, $VARS expanded from it) in a scratch folder
that holds the source tree's deploy/ and build/. It may fail (no planner, no
measurement file), but not as a usage error: an unknown command or flag, a
missing or malformed value, a missing required flag. A synthetic README with
such lines is checked first, so the check itself cannot pass by accident.

  readme_commands_test.py TESSERA SOURCE_DIR BUILD_DIR
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

# What a usage error's line says (FlagSet, ReportError, the dispatch).
USAGE = re.compile(
    r"unknown flag|unexpected argument|unknown command|missing value|"
    r"empty value|given twice|: required \(|is not a number|is not an integer|"
    r"is not a format|is ambiguous for bytes|not true or false|"
    r"is not a finite number|missing [A-Z]+ \(usage|conflicts with|"
    r"give --json or --csv")


def commands(readme_text):
    """The tessera command lines of the code blocks, continuations joined."""
    lines = readme_text.split("\n")
    result = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.startswith("    "):
            continue
        text = line.strip()
        while text.endswith("\\") and i < len(lines):
            text = text[:-1] + " " + lines[i].strip()
            i += 1
        words = text.split()
        if words and words[0] in ("tessera", "build/cli/tessera"):
            result.append(text)
    return result


def check(tessera, readme_text, workdir):
    """Runs each command; returns the usage errors, one string each."""
    env = dict(os.environ, TESSERA_PLANNER="127.0.0.1:1")
    problems = []
    found = commands(readme_text)
    if not found:
        return ["no tessera command lines found"]
    for text in found:
        try:
            args = shlex.split(os.path.expandvars(text), comments=True)
        except ValueError as e:
            problems.append(f"{text}\n    does not split as a shell line: {e}")
            continue
        for shell_word in ("|", "||", "&&", ";", ">", "<", "&"):
            if shell_word in args:
                problems.append(f"{text}\n    is not one command ({shell_word})")
                break
        else:
            run = subprocess.run([tessera] + args[1:], cwd=workdir, env=env,
                                 capture_output=True, text=True, timeout=120)
            usage = [l for l in run.stderr.splitlines() if USAGE.search(l)]
            if run.returncode == 2 and usage:
                problems.append(f"{text}\n    exit 2: " + "\n    ".join(usage))
            else:
                first = (run.stderr.splitlines() or [""])[0]
                print(f"ok (exit {run.returncode}): {text}\n    {first}")
    return problems


def main():
    tessera, source_dir, build_dir = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as workdir:
        os.symlink(os.path.join(source_dir, "deploy"),
                   os.path.join(workdir, "deploy"))
        os.symlink(build_dir, os.path.join(workdir, "build"))
        # The check finds a drifted README: each of these lines is wrong.
        drifted = "\n".join([
            "    build/cli/tessera plan --spec deploy/examples/study.json --nodez 3",
            "    tessera trials --study 1 -o yaml",
            "    tessera plan --model llama2-7b --gpu h100-sxm --nodes 2 \\",
            "        --seq-len 8q",
            "    tessera lsit",
            "    tessera watch 1 | studies",
        ])
        caught = check(tessera, drifted, workdir)
        if len(caught) != 5:
            print("FAIL: the check missed a drifted line:\n" + "\n".join(caught))
            return 1
        problems = []
        docs = os.path.join(source_dir, "docs")
        pages = ["README.md"] + sorted(
            os.path.join("docs", name) for name in os.listdir(docs)
            if name.endswith(".md"))
        for page in pages:
            with open(os.path.join(source_dir, page)) as f:
                text = f.read()
            if page != "README.md" and not commands(text):
                continue  # a page without commands
            problems += [f"{page}: {p}" for p in check(tessera, text, workdir)]
    if problems:
        print("FAIL: documented command lines that do not parse:\n" +
              "\n".join(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
