#!/usr/bin/env python3
"""A naive grep baseline for the bug-report recall probe (docs/precision.md, session 14).

About thirty regular expressions of the kind a PyTorch user hunting TPU slowness would write
by hand, matched line by line with no parsing, no scopes and no tensor facts. It exists to be
compared with tpulint on the same labelled lines: issue 11's user measured such a grep at 56%
recall where tpulint found 35%. The list was written down (and committed) before tpulint was
scored on the session-14 probe.

Usage: naive-grep-baseline.py DIR_OR_FILE... ; prints `path:line:pattern-name` per flagged line
(one line per pattern that matches), and with --json a JSON list of {file, line, pattern}.
"""

import json
import os
import re
import sys

# (name, regex). A line is flagged once per matching pattern.
PATTERNS = [
    # host syncs
    ("item", r"\.item\(\)"),
    ("tolist", r"\.tolist\(\)"),
    ("cpu", r"\.cpu\(\)"),
    ("numpy", r"\.numpy\(\)"),
    ("float-call", r"\bfloat\("),
    ("int-call", r"\bint\([^)]*[\w\]\)]\.(sum|max|min|mean|argmax|item)\("),
    ("bool-call", r"\bbool\("),
    ("print-tensorish", r"print\(.*(loss|acc|tensor|\.sum\(|\.mean\()"),
    ("format-loss", r"(%|\.format\(|f['\"]).*\b(loss|acc)\b"),
    ("math-on-tensor", r"\b(math\.)?(sqrt|exp|log|ceil|floor)\(\s*torch\."),
    ("if-tensor-reduction", r"^\s*(if|while|elif)\b.*\.(sum|any|all|max|min|mean|eq|item)\("),
    ("tensor-or-and", r"\)\s+(or|and)\s+|\b(or|and)\s+\d"),
    # dynamic shapes
    ("nonzero", r"\.nonzero\(|torch\.nonzero\("),
    ("masked-select", r"masked_select\("),
    ("unique", r"\.unique\(|torch\.unique\("),
    ("where-one-arg", r"torch\.where\([^,()]*\)"),
    ("mask-assign", r"\[[^\]]*([<>!=]=?|~)[^\]]*\]\s*[-+*/]?=[^=]"),
    ("mask-index-var", r"\[\s*~?\w*mask\w*(\.\w+\([^)]*\))*\s*\]"),
    ("take", r"torch\.take\("),
    # placement
    ("cuda-call", r"\.cuda\("),
    ("cuda-module", r"torch\.cuda\."),
    ("cuda-string", r"['\"]cuda(:\d+)?['\"]"),
    ("torch-tensor", r"torch\.tensor\("),
    ("cpu-factory-inplace", r"[-+*/]=\s*torch\.(tensor|ones|zeros|randn|rand)\("),
    # saving and distributed
    ("torch-save", r"torch\.save\("),
    ("xm-save", r"xm\.save\("),
    ("master-ordinal", r"is_master_ordinal\(|get_ordinal\(\)\s*==\s*0|rank\s*==\s*0"),
    ("rendezvous", r"xm\.rendezvous\("),
    # ops known to fall back or compile slowly
    ("interpolate-upsample", r"F\.interpolate\(|nn\.Upsample\(|upsample"),
    ("fallback-ops", r"F\.glu\(|nn\.GLU\(|grid_sample\(|torch\.fft\.|nn\.PReLU\(|weight_norm\("),
    ("double", r"\.double\(\)|torch\.float64"),
]

COMPILED = [(name, re.compile(rx)) for name, rx in PATTERNS]


def python_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, _dirs, files in os.walk(path):
                for name in sorted(files):
                    if name.endswith(".py"):
                        yield os.path.join(root, name)
        else:
            yield path


def scan(path):
    hits = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
            for name, regex in COMPILED:
                if regex.search(code):
                    hits.append({"file": path, "line": number, "pattern": name})
    return hits


def main(argv):
    as_json = "--json" in argv
    paths = [a for a in argv if a != "--json"]
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    hits = [hit for path in python_files(paths) for hit in scan(path)]
    if as_json:
        json.dump(hits, sys.stdout, indent=1)
        print()
    else:
        for hit in hits:
            print(f"{hit['file']}:{hit['line']}:{hit['pattern']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
