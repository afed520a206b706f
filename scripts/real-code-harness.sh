#!/usr/bin/env bash
# The real-code harness (CI section `realcode`): tpulint checks and fixes pinned releases of
# diffusers, accelerate, transformers, lightning and torchvision in scratch copies. Downloads are
# cached in .ci-cache/realcode/ (git-ignored). See scripts/real_code_check.py for the checks.
#   scripts/real-code-harness.sh [path/to/tpulint]   (default: a debug build of the workspace)
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-}
if [[ -z "$binary" ]]; then
  # The debug build: the analyzer and its dependencies are built at opt-level 2 even there.
  cargo build --locked -q -p tpulint
  binary=${CARGO_TARGET_DIR:-target}/debug/tpulint
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq python3-pip >/dev/null
fi
python3 scripts/real_code_check.py --self-test
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python3 scripts/real_code_check.py --tpulint "$binary" --scratch "$scratch"
