#!/usr/bin/env python3
"""Draws the blind precision sample of docs/precision.md: runs the built tpulint with default
settings over pinned real code bases, pools the findings and draws a seeded, stratified sample.

    python3 scripts/precision-sample.py --seed 20261201 --out /tmp/sample.json
    python3 scripts/precision-sample.py --render /tmp/sample.json --verdicts verdicts.tsv

The second form turns a judged sample (a TSV of `id<TAB>W|D|U<TAB>reason`) into the markdown
tables of docs/precision.md.

Writes the sample as JSON (one object per finding: code base, path, line, code, severity,
message, fix and the source lines around it) and prints a review sheet to stdout. The protocol
(strata, sizes, ordering) is described in docs/precision.md; change it only with a new seed.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import random
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import realcode_corpus  # noqa: E402

CODE_BASES = list(realcode_corpus.RELEASES) + list(realcode_corpus.REPOSITORIES)
# The held-out pass: `--bases held-out` (or any names from HELD_OUT_RELEASES).
HELD_OUT = list(realcode_corpus.HELD_OUT_RELEASES)
# The seventh pass: `--bases held-out-2` (a second held-out set, HELD_OUT_2_RELEASES).
HELD_OUT_2 = list(realcode_corpus.HELD_OUT_2_RELEASES)
# The eighth pass: `--bases held-out-3` (a third held-out set, HELD_OUT_3_RELEASES).
HELD_OUT_3 = list(realcode_corpus.HELD_OUT_3_RELEASES)
# The ninth pass: `--bases held-out-4` (six wheels of HELD_OUT_4_RELEASES and the TPU-aware
# repository of HELD_OUT_4_REPOSITORIES).
HELD_OUT_4 = list(realcode_corpus.HELD_OUT_4_RELEASES) + list(realcode_corpus.HELD_OUT_4_REPOSITORIES)
# The tenth pass: `--bases held-out-5` (seven wheels of HELD_OUT_5_RELEASES and the TPU-aware
# repository of HELD_OUT_5_REPOSITORIES).
HELD_OUT_5 = list(realcode_corpus.HELD_OUT_5_RELEASES) + list(realcode_corpus.HELD_OUT_5_REPOSITORIES)
# The eleventh pass: `--bases held-out-6` (seven wheels of HELD_OUT_6_RELEASES and the TPU-aware
# repository of HELD_OUT_6_REPOSITORIES).
HELD_OUT_6 = list(realcode_corpus.HELD_OUT_6_RELEASES) + list(realcode_corpus.HELD_OUT_6_REPOSITORIES)
# The twelfth pass: `--bases held-out-7` (seven wheels of HELD_OUT_7_RELEASES and the TPU-aware
# repository of HELD_OUT_7_REPOSITORIES).
HELD_OUT_7 = list(realcode_corpus.HELD_OUT_7_RELEASES) + list(realcode_corpus.HELD_OUT_7_REPOSITORIES)
# The thirteenth pass: `--bases held-out-8` (seven wheels of HELD_OUT_8_RELEASES and the TPU-aware
# repository of HELD_OUT_8_REPOSITORIES).
HELD_OUT_8 = list(realcode_corpus.HELD_OUT_8_RELEASES) + list(realcode_corpus.HELD_OUT_8_REPOSITORIES)
# The fourteenth pass: `--bases held-out-9` (seven wheels of HELD_OUT_9_RELEASES and the TPU-aware
# repository of HELD_OUT_9_REPOSITORIES).
HELD_OUT_9 = list(realcode_corpus.HELD_OUT_9_RELEASES) + list(realcode_corpus.HELD_OUT_9_REPOSITORIES)
# The fifteenth pass: `--bases held-out-10` (seven wheels of HELD_OUT_10_RELEASES and the TPU-aware
# repository of HELD_OUT_10_REPOSITORIES).
HELD_OUT_10 = list(realcode_corpus.HELD_OUT_10_RELEASES) + list(realcode_corpus.HELD_OUT_10_REPOSITORIES)
# The sixteenth pass: `--bases held-out-11` (seven wheels of HELD_OUT_11_RELEASES and the TPU-aware
# repository of HELD_OUT_11_REPOSITORIES).
HELD_OUT_11 = list(realcode_corpus.HELD_OUT_11_RELEASES) + list(realcode_corpus.HELD_OUT_11_REPOSITORIES)
# The seventeenth pass: `--bases held-out-12` (seven wheels of HELD_OUT_12_RELEASES and the TPU-aware
# repository of HELD_OUT_12_REPOSITORIES).
HELD_OUT_12 = list(realcode_corpus.HELD_OUT_12_RELEASES) + list(realcode_corpus.HELD_OUT_12_REPOSITORIES)
# The eighteenth pass: `--bases held-out-13` (seven wheels of HELD_OUT_13_RELEASES and the TPU-aware
# repository of HELD_OUT_13_REPOSITORIES).
HELD_OUT_13 = list(realcode_corpus.HELD_OUT_13_RELEASES) + list(realcode_corpus.HELD_OUT_13_REPOSITORIES)
# The nineteenth pass: `--bases held-out-14` (seven wheels of HELD_OUT_14_RELEASES and the TPU-aware
# repository of HELD_OUT_14_REPOSITORIES).
HELD_OUT_14 = list(realcode_corpus.HELD_OUT_14_RELEASES) + list(realcode_corpus.HELD_OUT_14_REPOSITORIES)
# The twentieth pass: `--bases held-out-15` (seven wheels of HELD_OUT_15_RELEASES and the TPU-aware
# repository of HELD_OUT_15_REPOSITORIES).
HELD_OUT_15 = list(realcode_corpus.HELD_OUT_15_RELEASES) + list(realcode_corpus.HELD_OUT_15_REPOSITORIES)


def run_tpulint(binary: str, directory: pathlib.Path) -> list[dict]:
    # Default settings: no --select, no configuration (only .py files were unpacked).
    result = subprocess.run([binary, "check", "--output-format", "json", "--exit-zero", "."],
                            cwd=directory, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"error: tpulint exited {result.returncode} on {directory}: {result.stderr.strip()[:500]}")
    return json.loads(result.stdout)


def is_test_path(relpath: str) -> bool:
    """Test code by path convention (for the pool statistics only; the draw ignores it)."""
    parts = relpath.split("/")
    name = parts[-1]
    return (any(p in ("test", "tests", "testing", "test_utils") for p in parts[:-1])
            or name.startswith("test_") or name.endswith("_test.py") or name in ("conftest.py", "testing_utils.py"))


def context(path: pathlib.Path, row: int, radius: int = 3) -> list[str]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    low, high = max(1, row - radius), min(len(lines), row + radius)
    return [f"{n:>6}{'>' if n == row else ' '} {lines[n - 1]}" for n in range(low, high + 1)]


VERDICTS = {"W": "wanted", "D": "debatable", "U": "unwanted"}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a share k/n."""
    centre = (k + z * z / 2) / (n + z * z)
    half = z * (k * (n - k) / n + z * z / 4) ** 0.5 / (n + z * z)
    return centre - half, centre + half


def render(sample_path: str, verdicts_path: str) -> int:
    data = json.loads(pathlib.Path(sample_path).read_text())
    verdicts = {}
    for line in pathlib.Path(verdicts_path).read_text().splitlines():
        if line.strip():
            index, verdict, reason = line.split("\t", 2)
            verdicts[int(index)] = (verdict, reason)
    sample = data["sample"]
    for f in sample:
        # A parse error has no rule code; name it by its kind so the rule table can sort it.
        f["code"] = f["code"] or f["name"]
    missing = [f["id"] for f in sample if f["id"] not in verdicts]
    if missing:
        raise SystemExit(f"error: no verdict for findings {missing}")
    counts = collections.Counter(verdicts[f["id"]][0] for f in sample)
    total = len(sample)
    print(f"Drawn {total}: **{counts['W']} wanted ({100 * counts['W'] / total:.0f}%)**, {counts['D']} debatable, "
          f"{counts['U']} unwanted; wanted or debatable {100 * (counts['W'] + counts['D']) / total:.0f}%.")
    # Pool-weighted: each code base's wanted share weighted by its share of all findings.
    totals = data["totals"]
    weighted = 0.0
    for base, n in totals.items():
        drawn = [f for f in sample if f["base"] == base]
        if drawn:
            weighted += n * sum(verdicts[f["id"]][0] == "W" for f in drawn) / len(drawn)
    print(f"Pool-weighted estimate of the wanted share: {100 * weighted / sum(totals.values()):.0f}%.")
    low, high = wilson(counts["W"], total)
    low2, high2 = wilson(counts["W"] + counts["D"], total)
    print(f"Wilson 95% interval: wanted {100 * low:.0f}%-{100 * high:.0f}%, "
          f"wanted or debatable {100 * low2:.0f}%-{100 * high2:.0f}%.")
    print()
    print("| Severity | Drawn | Wanted | Debatable | Unwanted |")
    print("|---|---|---|---|---|")
    for severity in ("error", "warning", "info"):
        c = collections.Counter(verdicts[f["id"]][0] for f in sample if f["severity"] == severity)
        print(f"| {severity} | {sum(c.values())} | {c['W']} | {c['D']} | {c['U']} |")
    print()
    print("| Code base | Findings | Drawn | Wanted | Debatable | Unwanted |")
    print("|---|---|---|---|---|---|")
    for base, n in totals.items():
        c = collections.Counter(verdicts[f["id"]][0] for f in sample if f["base"] == base)
        print(f"| {base} | {n} | {sum(c.values())} | {c['W']} | {c['D']} | {c['U']} |")
    print()
    print("| Rule | Drawn | Wanted | Debatable | Unwanted |")
    print("|---|---|---|---|---|")
    for code in sorted({f["code"] for f in sample}):
        c = collections.Counter(verdicts[f["id"]][0] for f in sample if f["code"] == code)
        print(f"| {code} | {sum(c.values())} | {c['W']} | {c['D']} | {c['U']} |")
    print()
    print("| # | Finding | Rule | Severity | Verdict | Reason |")
    print("|---|---|---|---|---|---|")
    for f in sample:
        verdict, reason = verdicts[f["id"]]
        reason = reason.replace("|", "\\|")
        print(f"| {f['id']} | `{f['base']}/{f['relpath']}:{f['location']['row']}` | {f['code']} | {f['severity']} "
              f"| {VERDICTS[verdict]} | {reason} |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", metavar="SAMPLE_JSON")
    parser.add_argument("--verdicts", metavar="TSV")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--per-base", type=int, default=17)
    parser.add_argument("--tpulint", default=str(realcode_corpus.ROOT / "target" / "debug" / "tpulint"))
    parser.add_argument("--scratch", default="/tmp/tpulint-precision-corpus")
    parser.add_argument("--out")
    parser.add_argument("--bases", default=",".join(CODE_BASES))
    args = parser.parse_args()
    if args.render:
        if not args.verdicts:
            parser.error("--render needs --verdicts")
        return render(args.render, args.verdicts)
    if args.seed is None or not args.out:
        parser.error("--seed and --out are required to draw a sample")

    scratch = pathlib.Path(args.scratch)
    named = {"held-out": HELD_OUT, "held-out-2": HELD_OUT_2, "held-out-3": HELD_OUT_3, "held-out-4": HELD_OUT_4,
             "held-out-5": HELD_OUT_5, "held-out-6": HELD_OUT_6,
             "held-out-7": HELD_OUT_7, "held-out-8": HELD_OUT_8, "held-out-9": HELD_OUT_9,
             "held-out-10": HELD_OUT_10, "held-out-11": HELD_OUT_11,
             "held-out-12": HELD_OUT_12, "held-out-13": HELD_OUT_13,
             "held-out-14": HELD_OUT_14, "held-out-15": HELD_OUT_15}
    bases = named[args.bases] if args.bases in named else args.bases.split(",")
    directories = realcode_corpus.prepare(bases, scratch)

    pool: dict[str, list[dict]] = {}
    for base in bases:
        findings = []
        for finding in run_tpulint(args.tpulint, directories[base]):
            path = pathlib.Path(finding["filename"])
            finding["base"] = base
            finding["relpath"] = str(path.relative_to(directories[base]))
            findings.append(finding)
        findings.sort(key=lambda f: (f["relpath"], f["location"]["row"], f["location"]["column"], f["code"]))
        pool[base] = findings

    rng = random.Random(args.seed)
    sample: list[dict] = []
    rest: list[dict] = []
    for base in bases:
        findings = pool[base]
        if len(findings) <= args.per_base:
            sample.extend(findings)
        else:
            chosen = set(rng.sample(range(len(findings)), args.per_base))
            sample.extend(f for i, f in enumerate(findings) if i in chosen)
            rest.extend(f for i, f in enumerate(findings) if i not in chosen)
    shortfall = args.per_base * len(bases) - len(sample)
    if shortfall > 0 and rest:
        sample.extend(rng.sample(rest, min(shortfall, len(rest))))

    totals = {base: len(pool[base]) for base in bases}
    everything = [f for base in bases for f in pool[base]]
    in_tests = sum(is_test_path(f["relpath"]) for f in everything)
    by_code = dict(collections.Counter(f["code"] for f in everything).most_common())
    for index, finding in enumerate(sample, 1):
        finding["id"] = index
        finding["context"] = context(directories[finding["base"]] / finding["relpath"], finding["location"]["row"])
    pathlib.Path(args.out).write_text(json.dumps({"seed": args.seed, "totals": totals, "in_tests": in_tests,
                                                     "by_code": by_code, "sample": sample}, indent=1))

    print(f"seed {args.seed}; findings per code base: {totals}; total {sum(totals.values())}; drawn {len(sample)}")
    print(f"in test code (by path): {in_tests} of {len(everything)}; pool by rule: {by_code}")
    print("drawn by rule:", dict(collections.Counter(f["code"] for f in sample).most_common()))
    for finding in sample:
        fix = finding.get("fix")
        fix_text = ""
        if fix:
            edits = " | ".join(repr(e["content"]) + f"@{e['location']['row']}" for e in fix["edits"])
            fix_text = f"\n        fix ({fix['applicability']}): {fix['message']}: {edits}"
        print(f"\n#{finding['id']} {finding['base']}/{finding['relpath']}:{finding['location']['row']} "
              f"{finding['code']} [{finding['severity']}] {finding['message']}{fix_text}")
        print("\n".join(finding["context"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
