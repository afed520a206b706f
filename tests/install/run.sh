#!/usr/bin/env bash
# Installs tpulint the way users do and checks the result (the `pip` section of
# scripts/test-all.sh):
#  1. `maturin build` makes the wheel; installed into a fresh virtual environment, it puts a working
#     `tpulint` on PATH, `python -m tpulint` runs it, and `tpulint check examples/` finds what
#     the cargo-built binary finds;
#  2. `pip install .` of the checkout (the PEP 517 path: pip fetches maturin itself) works in a
#     fresh virtual environment;
#  3. real pre-commit runs the repository's hook (.pre-commit-hooks.yaml) in a scratch git
#     repository: `pre-commit try-repo` fails on a file with findings; `pre-commit run` passes on
#     a clean file and on an excluded one named explicitly (--force-exclude), fails on a notebook
#     with a finding, and the documented `args: [--fix]` variant fixes a file.
#
# CI time: every build here uses the dev profile (`--profile dev`, MATURIN_PEP517_ARGS), whose
# dependencies earlier sections already compiled into target/; `pip install .` without the
# variable, as users run it, builds the release profile. pre-commit installs the hook from a
# clone of the repository, so its two environments (try-repo's is temporary) each recompile the
# workspace's own crates, about a minute each on 2 cores.
#
# Usage: tests/install/run.sh [TPULINT_BINARY] (default target/debug/tpulint, built if missing).
# Tools (maturin, pre-commit) live in a machine-wide cache, TPULINT_TOOLS_CACHE (default
# ~/.cache/tpulint-ci); pip's own download cache makes reinstalls offline-fast.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
MATURIN_VERSION=1.16.0
PRE_COMMIT_VERSION=4.7.0
python=${TPULINT_TEST_PYTHON:-python3}
target_dir=${CARGO_TARGET_DIR:-$root/target}
binary=${1:-$target_dir/debug/tpulint}
[[ -x "$binary" ]] || cargo build --locked -p tpulint
# Absolute: the checks below run it from other directories (test-all.sh passes a relative
# `target/debug/tpulint` when CARGO_TARGET_DIR is unset, as on a fresh machine).
binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")

step() { printf -- '--- [%ss] %s\n' "$SECONDS" "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
passed=0
ok() { passed=$((passed + 1)); printf 'ok: %s\n' "$*"; }

tools="${TPULINT_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tpulint-ci}/install-tools-maturin-$MATURIN_VERSION-pre-commit-$PRE_COMMIT_VERSION"
if [[ ! -x "$tools/bin/maturin" || ! -x "$tools/bin/pre-commit" ]]; then
  step "installing maturin $MATURIN_VERSION and pre-commit $PRE_COMMIT_VERSION into $tools"
  rm -rf "$tools"
  "$python" -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet --disable-pip-version-check "maturin==$MATURIN_VERSION" "pre-commit==$PRE_COMMIT_VERSION"
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fresh_venv() { "$python" -m venv "$1" && "$1/bin/python" -m pip --version >/dev/null; }
cargo_version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)

# ---- 1. the wheel ----
step "maturin build --profile dev"
"$tools/bin/maturin" build --locked --profile dev --quiet --out "$scratch/wheels" >/dev/null
wheel=$(ls "$scratch"/wheels/tpulint-*.whl)
[[ "$(basename "$wheel")" == "tpulint-$cargo_version-"* ]] || fail "the wheel's version is not the workspace's $cargo_version: $wheel"
ok "wheel $(basename "$wheel")"

fresh_venv "$scratch/wheel-venv"
"$scratch/wheel-venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheel"
installed="$scratch/wheel-venv/bin/tpulint"
[[ -x "$installed" ]] || fail "the wheel did not install bin/tpulint"
[[ "$("$installed" --version)" == "tpulint $cargo_version" ]] || fail "tpulint --version: $("$installed" --version)"
[[ "$("$scratch/wheel-venv/bin/python" -m tpulint --version)" == "tpulint $cargo_version" ]] || fail "python -m tpulint --version"
[[ "$("$scratch/wheel-venv/bin/python" -c 'import tpulint; print(tpulint.find_tpulint_bin())')" == "$installed" ]] || fail "find_tpulint_bin()"
ok "the wheel's tpulint, python -m tpulint and find_tpulint_bin() agree ($cargo_version)"

# The installed binary checks the example project exactly as the cargo-built one does.
set +e
# --no-cache: each binary checks for itself, and nothing is written into the checkout.
(cd examples && "$installed" check --no-cache --output-format json . >"$scratch/installed.json")
installed_status=$?
(cd examples && "$binary" check --no-cache --output-format json . >"$scratch/cargo.json")
set -e
[[ $installed_status == 1 ]] || fail "installed tpulint check examples/ exited $installed_status, expected 1 (findings)"
findings=$("$python" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$scratch/installed.json")
((findings > 0)) || fail "no findings in examples/"
cmp -s "$scratch/installed.json" "$scratch/cargo.json" || fail "the installed tpulint and $binary disagree on examples/"
(cd examples && "$scratch/wheel-venv/bin/python" -m tpulint check --no-cache --quiet --exit-zero . >/dev/null) || fail "python -m tpulint check"
ok "installed tpulint check examples/: $findings findings, exit 1, same as the cargo build"
# Without the binary, `python -m tpulint` says so in one line and exits 2.
mv "$installed" "$installed.moved"
set +e
missing=$("$scratch/wheel-venv/bin/python" -m tpulint --version 2>&1)
missing_status=$?
set -e
mv "$installed.moved" "$installed"
[[ $missing_status == 2 && "$missing" == "error: the tpulint executable is not installed"* ]] || fail "python -m tpulint without the binary: $missing_status $missing"
ok "python -m tpulint without the binary: one error line, exit 2"

# ---- 2. pip install . (PEP 517 through maturin, fetched by pip into an isolated build env) ----
step "pip install . (dev profile)"
fresh_venv "$scratch/pip-venv"
MATURIN_PEP517_ARGS="--profile dev" "$scratch/pip-venv/bin/python" -m pip install --quiet --disable-pip-version-check "$root"
[[ "$("$scratch/pip-venv/bin/tpulint" --version)" == "tpulint $cargo_version" ]] || fail "pip install . gave no working tpulint"
ok "pip install . in a fresh venv gives tpulint $cargo_version"

# ---- 3. pre-commit ----
repo="$scratch/project"
mkdir -p "$repo/vendor"
cat >"$repo/pyproject.toml" <<'TOML'
[tool.tpulint]
exclude = ["vendor"]
TOML
printf 'import torch\n\ndevice = torch.device("cuda")\n\n\ndef train(model, loader):\n    for x in loader:\n        print(model(x.cuda()).sum().item())\n' >"$repo/bad.py"
cp "$repo/bad.py" "$repo/vendor/lib.py"
printf 'import torch\n\n\ndef add(a, b):\n    return a + b\n' >"$repo/clean.py"
printf 'import torch_xla\nimport torch_xla.core.xla_model as xm\n\n\ndef step():\n    xm.mark_step()\n' >"$repo/xla.py"
cat >"$repo/explore.ipynb" <<'JSON'
{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": ["import torch\n", "device = torch.device(\"cuda\")\n"]}],
 "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
JSON
git -C "$repo" init --quiet
git -C "$repo" add --all

# pre-commit builds the hook's environment with `pip install .`; the dev profile and the shared
# target directory keep that to the workspace's own crates.
# No incremental state for those builds: it would be written anew for every clone's path.
export MATURIN_PEP517_ARGS="--profile dev" CARGO_TARGET_DIR="$target_dir" CARGO_INCREMENTAL=0
export PRE_COMMIT_HOME="$scratch/pre-commit-home"
hook_repo="$root"
hook_rev=$(git -C "$root" rev-parse HEAD)
if [[ -n "$(git -C "$root" status --porcelain --untracked-files=no -- .pre-commit-hooks.yaml pyproject.toml python server Cargo.toml Cargo.lock)" ]]; then
  # Uncommitted changes (a developer's run): pre-commit installs from a commit, so make one in
  # a throwaway clone, as try-repo does for its own runs.
  git clone --quiet --no-hardlinks "$root" "$scratch/hook-repo"
  (cd "$root" && git diff HEAD --binary) | git -C "$scratch/hook-repo" apply --allow-empty
  git -C "$scratch/hook-repo" -c user.name=ci -c user.email=ci@localhost commit --quiet --all --allow-empty -m "uncommitted changes"
  hook_repo="$scratch/hook-repo"
  hook_rev=$(git -C "$hook_repo" rev-parse HEAD)
fi

"$tools/bin/pre-commit" validate-manifest .pre-commit-hooks.yaml || fail ".pre-commit-hooks.yaml is not a valid pre-commit manifest"
ok ".pre-commit-hooks.yaml is a valid manifest"
step "pre-commit try-repo (builds the hook environment)"
set +e
(cd "$repo" && "$tools/bin/pre-commit" try-repo "$root" tpulint --files bad.py >"$scratch/try-repo.log" 2>&1)
status=$?
set -e
[[ $status == 1 ]] || { cat "$scratch/try-repo.log"; fail "try-repo on a file with findings exited $status, expected 1"; }
grep -q 'TPU401' "$scratch/try-repo.log" || { cat "$scratch/try-repo.log"; fail "try-repo did not report TPU401"; }
ok "pre-commit try-repo: the hook fails on a file with findings"

cat >"$repo/.pre-commit-config.yaml" <<YAML
repos:
  - repo: $hook_repo
    rev: $hook_rev
    hooks:
      - id: tpulint
      - id: tpulint
        alias: tpulint-fix
        args: [--fix]
YAML
git -C "$repo" add .pre-commit-config.yaml
run_hook() { (cd "$repo" && "$tools/bin/pre-commit" run "$@" >"$scratch/run.log" 2>&1); }
step "pre-commit run (builds the hook environment once for the runs below)"
run_hook tpulint --files clean.py || { cat "$scratch/run.log"; fail "the hook failed on a clean file"; }
ok "pre-commit run: the hook passes on a clean file"
run_hook tpulint --files vendor/lib.py || { cat "$scratch/run.log"; fail "the hook checked vendor/lib.py although pyproject.toml excludes vendor"; }
! run_hook tpulint --files bad.py vendor/lib.py || fail "the hook passed bad.py"
grep -q 'bad.py' "$scratch/run.log" && ! grep -q 'vendor/lib.py' "$scratch/run.log" || { cat "$scratch/run.log"; fail "exclude was not respected"; }
ok "pre-commit run: excluded files named by pre-commit are skipped (--force-exclude)"
! run_hook tpulint --files explore.ipynb || fail "the hook passed a notebook with a finding"
grep -q 'explore.ipynb:cell 1:2' "$scratch/run.log" || { cat "$scratch/run.log"; fail "the hook did not check the notebook (types_or: jupyter)"; }
ok "pre-commit run: notebooks are checked (types_or jupyter)"
! run_hook tpulint-fix --files xla.py || fail "the --fix hook did not report the file it modified"
grep -q 'torch_xla.sync()' "$repo/xla.py" && ! grep -q 'mark_step' "$repo/xla.py" || { cat "$scratch/run.log" "$repo/xla.py"; fail "args: [--fix] did not fix xla.py"; }
ok "pre-commit run: args: [--fix] applies the safe fix"

echo "install checks took ${SECONDS}s"
echo "$passed passed, 0 failed"
