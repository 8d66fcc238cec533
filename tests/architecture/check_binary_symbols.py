#!/usr/bin/env python3
"""A binary holds no code of the namespaces it must not link.

  check_binary_symbols.py BINARY --control CONTROL_BINARY NAMESPACE...

Fails when `nm -C` finds a symbol of BINARY defined in one of NAMESPACEs
(tessera::costmodel:: ...), naming a few. CONTROL_BINARY must define symbols
of each NAMESPACE (the planner links them all): without that the check could
pass because nm read nothing, or a namespace was misspelled.
"""
import argparse
import shutil
import subprocess
import sys


def defined_symbols(binary):
    run = subprocess.run(["nm", "-C", "--defined-only", binary],
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"nm {binary}: {run.stderr.strip()}")
    return run.stdout.splitlines()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--control", required=True)
    parser.add_argument("namespaces", nargs="+")
    args = parser.parse_args()
    if shutil.which("nm") is None:
        print("nm (binutils) is not installed: cannot read the binaries")
        return 77
    control = defined_symbols(args.control)
    for ns in args.namespaces:
        if not any(ns in line for line in control):
            print(f"FAIL: the control {args.control} defines no {ns} symbol: "
                  "the check would prove nothing")
            return 1
    found = [line for line in defined_symbols(args.binary)
             if any(ns in line for ns in args.namespaces)]
    if found:
        print(f"FAIL: {args.binary} defines {len(found)} symbols of "
              f"{', '.join(args.namespaces)}, e.g.:")
        for line in found[:5]:
            print("   ", line)
        return 1
    print(f"{args.binary}: no symbol of {', '.join(args.namespaces)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
