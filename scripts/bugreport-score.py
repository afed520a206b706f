#!/usr/bin/env python3
"""Score tpulint (and optionally the naive grep) against labelled lines of real bug-report code.

The bug-report probe (docs/precision.md, "Recall on real bug-report code") keeps user code
out of the repository: snippets and a `labels.tsv` live next to each other on the helper's
machine. This script reads that `labels.tsv` and the JSON that `tpulint check --output-format
json` and `scripts/naive-grep-baseline.py --json` print, and reports recall and the findings
on unlabelled lines.

labels.tsv: a header, then one row per labelled line with tab-separated columns
`file, line, expected, construct, quote, fault_today, edits`. `expected` is a rule code or
`none` (no rule covers the construct); `fault_today` starts with `yes`, `no` or `unknown`.

A labelled line is found by tpulint when a finding whose code is the expected rule starts on
that line (any severity: information findings are shown by default). A `none` line cannot be
found by tpulint; it counts against recall over the fault-today lines, not over the lines a
rule covers. The grep finds a line when any of its patterns matches it.

Usage:
    bugreport-score.py LABELS.tsv TPULINT.json [--grep GREP.json] [--verbose]
"""

import argparse
import csv
import json
import os
import sys
from collections import defaultdict


def load_labels(path):
    labels = []
    with open(path, encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        for row in reader:
            verdict = row["fault_today"].strip().split(":", 1)[0].strip().lower()
            labels.append(
                {
                    "file": row["file"].strip(),
                    "line": int(row["line"]),
                    "expected": row["expected"].strip(),
                    "construct": row["construct"].strip(),
                    "fault_today": verdict == "yes",
                }
            )
    return labels


def load_tpulint(path):
    """Findings keyed by (basename, line): a list of (code, severity, message)."""
    with open(path, encoding="utf-8") as handle:
        findings = json.load(handle)
    by_line = defaultdict(list)
    for finding in findings:
        key = (os.path.basename(finding["filename"]), finding["location"]["row"])
        by_line[key].append((finding["code"], finding.get("severity", ""), finding["message"]))
    return by_line


def load_grep(path):
    with open(path, encoding="utf-8") as handle:
        hits = json.load(handle)
    by_line = defaultdict(list)
    for hit in hits:
        by_line[(os.path.basename(hit["file"]), hit["line"])].append(hit["pattern"])
    return by_line


def ratio(found, total):
    return f"{found}/{total} ({found / total:.2f})" if total else f"{found}/0"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("labels")
    parser.add_argument("tpulint")
    parser.add_argument("--grep")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    labels = load_labels(args.labels)
    tpulint = load_tpulint(args.tpulint)
    grep = load_grep(args.grep) if args.grep else None

    def tpulint_found(label):
        codes = [code for code, _, _ in tpulint.get((label["file"], label["line"]), [])]
        return label["expected"] != "none" and label["expected"] in codes

    def grep_found(label):
        return bool(grep.get((label["file"], label["line"]))) if grep is not None else False

    groups = {
        "all labelled lines": labels,
        "fault-today lines": [label for label in labels if label["fault_today"]],
        "fault-today lines a rule covers": [
            label for label in labels if label["fault_today"] and label["expected"] != "none"
        ],
    }
    reports = {label["file"] for label in labels}
    print(f"{len(labels)} labelled lines in {len(reports)} reports")
    for name, group in groups.items():
        line = f"{name}: tpulint {ratio(sum(map(tpulint_found, group)), len(group))}"
        if grep is not None:
            line += f", grep {ratio(sum(map(grep_found, group)), len(group))}"
        print(line)

    if args.verbose:
        print("\nper label (file:line expected -> tpulint codes on the line | grep patterns):")
        for label in labels:
            codes = [code for code, _, _ in tpulint.get((label["file"], label["line"]), [])]
            mark = "FOUND" if tpulint_found(label) else "miss "
            fault = "fault" if label["fault_today"] else "not-a-fault"
            patterns = grep.get((label["file"], label["line"]), []) if grep is not None else []
            print(
                f"  {mark} {label['file']}:{label['line']} {label['expected']} ({fault})"
                f" -> {codes or '-'} | {patterns or '-'}"
            )

    labelled = {(label["file"], label["line"]) for label in labels}
    total = sum(len(found) for found in tpulint.values())
    on_labelled = sum(len(found) for key, found in tpulint.items() if key in labelled)
    print(f"\ntpulint findings: {total}, on labelled lines {on_labelled}")
    print("tpulint findings on unlabelled lines (judge each):")
    for (name, row), found in sorted(tpulint.items()):
        if (name, row) in labelled:
            continue
        for code, severity, message in found:
            print(f"  {name}:{row} {code} {severity}: {message}")
    if grep is not None:
        unlabelled = sorted(key for key in grep if key not in labelled)
        print(f"grep: {sum(map(len, grep.values()))} hits on {len(grep)} lines;"
              f" {len(unlabelled)} unlabelled lines")
        if args.verbose:
            for name, row in unlabelled:
                print(f"  {name}:{row} {grep[(name, row)]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
