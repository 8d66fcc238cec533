#!/usr/bin/env python3
"""Prints the counts of a ctest run's JUnit file (ctest --output-junit):
passed, failed and skipped apart, so that a skipped test (a GPU test on a
machine without one, a deploy test without its tools) is never counted as
passed. Exit status 0; the caller keeps ctest's own.

    tests/ctest_summary.py build/ctest-junit.xml
    # tests: 975 in all: 917 passed, 0 failed, 58 skipped
"""
import sys
import xml.etree.ElementTree as ET


def main(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"tests: no summary ({path}: {e})")
        return 0
    passed = failed = skipped = 0
    for case in root.iter("testcase"):
        if case.find("skipped") is not None or case.get("status") == "notrun":
            skipped += 1
        elif case.find("failure") is not None or case.find("error") is not None \
                or case.get("status") == "fail":
            failed += 1
        else:
            passed += 1
    total = passed + failed + skipped
    print(f"tests: {total} in all: {passed} passed, {failed} failed, "
          f"{skipped} skipped")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tests/ctest_summary.py JUNIT.xml")
    sys.exit(main(sys.argv[1]))
