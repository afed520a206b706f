#!/usr/bin/env python3
"""The real-code harness: tpulint on pinned releases of real PyTorch code, checked and fixed in
scratch copies.

    python3 scripts/real_code_check.py --tpulint target/debug/tpulint [--scratch DIR]

For each code base (diffusers, accelerate, transformers, lightning, torchvision; `pip download
--no-deps` of pinned releases, cached under .ci-cache/realcode/):

1. `tpulint check` exits 0 or 1 and never panics;
2. `tpulint check --fix` and, on a second copy, `--fix --unsafe-fixes`:
   - every file the fix changed still compiles (Python's `compile()`);
   - no fix adds a module-level import of an optional package (torch_xla, torch_tpu, jax) that
     runs unconditionally where the file did not already import that package so;
   - no fix adds an import under `if TYPE_CHECKING:`;
   - a second run of the same command changes nothing.

Prints one line per check and a summary; exits 1 when any check fails, 2 on bad input.
"""

from __future__ import annotations

import argparse
import ast
import collections
import hashlib
import pathlib
import shutil
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import realcode_corpus  # noqa: E402

CODE_BASES = ["diffusers", "accelerate", "transformers", "lightning", "torchvision"]
OPTIONAL_PACKAGES = ("torch_xla", "torch_tpu", "jax")


def digests(root: pathlib.Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.py"))
    }


def run_tpulint(binary: str, directory: pathlib.Path, extra: list[str]) -> tuple[int, str, float]:
    start = time.monotonic()
    result = subprocess.run([binary, "check", "--quiet", "--output-format", "concise", *extra, "."],
                            cwd=directory, capture_output=True, text=True)
    return result.returncode, result.stderr, time.monotonic() - start


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def optional_root(node: ast.stmt) -> list[str]:
    """The optional packages an import statement imports (empty when none)."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        names = [node.module]
    return sorted({n.split(".")[0] for n in names if n.split(".")[0] in OPTIONAL_PACKAGES})


def import_facts(tree: ast.Module) -> tuple[set[str], collections.Counter]:
    """(optional packages imported unconditionally at module level,
    imports written under `if TYPE_CHECKING:` as a multiset of their source text)."""
    unconditional: set[str] = set()
    for node in tree.body:
        unconditional.update(optional_root(node))
    type_checking: collections.Counter = collections.Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        type_checking[ast.unparse(sub)] += 1
    return unconditional, type_checking


def parse(text: str, name: str) -> ast.Module | None:
    try:
        return ast.parse(text, filename=name)
    except (SyntaxError, ValueError):
        return None


def check_fixed_copy(original: pathlib.Path, fixed: pathlib.Path, label: str) -> tuple[list[str], int]:
    """Failures of the changed files in `fixed` compared with `original`."""
    failures: list[str] = []
    before, after = digests(original), digests(fixed)
    changed = [path for path, digest in after.items() if before.get(path) != digest]
    for path in changed:
        old_text = (original / path).read_text(encoding="utf-8", errors="replace")
        new_text = (fixed / path).read_text(encoding="utf-8", errors="replace")
        old_tree = parse(old_text, path)
        if old_tree is None:
            continue  # the release itself does not parse with this Python: nothing to compare
        try:
            compile(new_text, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:
            failures.append(f"{label}: {path}: no longer compiles: {error.__class__.__name__}: {error}")
            continue
        new_tree = ast.parse(new_text, filename=path)
        old_unconditional, old_checking = import_facts(old_tree)
        new_unconditional, new_checking = import_facts(new_tree)
        for package in sorted(new_unconditional - old_unconditional):
            failures.append(f"{label}: {path}: adds an unconditional module-level import of optional package `{package}`")
        added = new_checking - old_checking
        for statement, count in sorted(added.items()):
            failures.append(f"{label}: {path}: adds `{statement}` under `if TYPE_CHECKING:`" + (f" ({count}x)" if count > 1 else ""))
    return failures, len(changed)


SELF_TEST_CASES = [
    # (name, original, fixed, expected number of failures)
    ("import inside the guard", "if is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n",
     "if is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n    import torch_xla\n", 0),
    ("import inside the function", "def f():\n    import torch_xla.core.xla_model as xm\n    xm.mark_step()\n",
     "def f():\n    import torch_xla\n    import torch_xla.core.xla_model as xm\n    torch_xla.sync()\n", 0),
    ("module level next to an unconditional import", "import torch_xla.core.xla_model as xm\n",
     "import torch_xla\nimport torch_xla.core.xla_model as xm\n", 0),
    ("unconditional module-level import added", "def f():\n    import torch_xla.core.xla_model as xm\n",
     "import torch_xla\ndef f():\n    import torch_xla.core.xla_model as xm\n", 1),
    ("import added under TYPE_CHECKING", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torch_xla import X\n",
     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torch_xla import X\n    import torch_xla\n", 1),
    ("syntax broken", "x = f(a)\n", "x = f(a, device=d\n", 1),
]


def self_test() -> int:
    """Runs the checks on synthetic before/after pairs: the harness must catch what it claims to."""
    import tempfile

    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for index, (name, original, fixed, expected) in enumerate(SELF_TEST_CASES):
            before, after = pathlib.Path(tmp, f"a{index}"), pathlib.Path(tmp, f"b{index}")
            before.mkdir()
            after.mkdir()
            (before / "m.py").write_text(original)
            (after / "m.py").write_text(fixed)
            failures, changed = check_fixed_copy(before, after, name)
            if len(failures) != expected or changed != 1:
                bad += 1
                print(f"self-test FAILED: {name}: expected {expected} failure(s), got {failures}")
    print(f"self-test: {len(SELF_TEST_CASES) - bad} of {len(SELF_TEST_CASES)} cases as expected")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--self-test", action="store_true", help="check the checks on synthetic cases, then exit")
    parser.add_argument("--tpulint", help="the tpulint binary to test")
    parser.add_argument("--scratch", default="/tmp/tpulint-real-code")
    parser.add_argument("--bases", default=",".join(CODE_BASES))
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.tpulint:
        parser.error("--tpulint is required")
    binary = str(pathlib.Path(args.tpulint).resolve())
    if not pathlib.Path(binary).is_file():
        print(f"error: no tpulint binary at {binary}", file=sys.stderr)
        return 2
    bases = args.bases.split(",")
    unknown = [b for b in bases if b not in realcode_corpus.RELEASES]
    if unknown:
        print(f"error: unknown code bases {unknown}; known: {sorted(realcode_corpus.RELEASES)}", file=sys.stderr)
        return 2

    scratch = pathlib.Path(args.scratch)
    pristine = realcode_corpus.prepare(bases, scratch / "pristine")
    failures: list[str] = []
    started = time.monotonic()
    for base in bases:
        files = len(digests(pristine[base]))
        code, stderr, seconds = run_tpulint(binary, pristine[base], [])
        if code not in (0, 1) or "panicked" in stderr:
            failures.append(f"{base}: check exited {code}: {stderr.strip()[-400:]}")
        print(f"{base}: check of {files} files exited {code} in {seconds:.1f}s")

        for label, extra in (("--fix", ["--fix"]), ("--fix --unsafe-fixes", ["--fix", "--unsafe-fixes"])):
            copy = scratch / ("fix" if extra == ["--fix"] else "unsafe") / base
            if copy.exists():
                shutil.rmtree(copy)
            shutil.copytree(pristine[base], copy)
            code, stderr, seconds = run_tpulint(binary, copy, extra)
            if code not in (0, 1) or "panicked" in stderr:
                failures.append(f"{base} {label}: exited {code}: {stderr.strip()[-400:]}")
            found, changed = check_fixed_copy(pristine[base], copy, f"{base} {label}")
            failures.extend(found)
            once = digests(copy)
            code, stderr, _ = run_tpulint(binary, copy, extra)
            if code not in (0, 1) or "panicked" in stderr:
                failures.append(f"{base} {label} (second run): exited {code}: {stderr.strip()[-400:]}")
            twice = digests(copy)
            unstable = sorted(p for p in twice if once.get(p) != twice[p])
            for path in unstable:
                failures.append(f"{base} {label}: {path}: a second run changed it again")
            print(f"{base}: {label} changed {changed} files in {seconds:.1f}s; "
                  f"{len(found)} broken, {len(unstable)} changed again by a second run")

    print(f"\nreal-code harness: {len(bases)} code bases in {time.monotonic() - started:.0f}s; "
          f"{len(failures)} failure(s)")
    for failure in failures:
        print(f"FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
