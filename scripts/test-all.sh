#!/usr/bin/env bash
# Runs every tpulint test, installing what the tests need first (idempotent; works on a fresh
# machine with the package registries only). Sections can be skipped with TPULINT_SKIP="lsp vscode".
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

skip() { [[ " ${TPULINT_SKIP:-} " == *" $1 "* ]]; }
section() { printf '\n==== %s ====\n' "$1"; }

# ---- Rust: unit, snapshot, meta and robustness tests; lints ----
if ! skip rust; then
  section "rust"
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
  cargo fmt --all -- --check
  cargo clippy --workspace --all-targets --locked -- -D warnings
  cargo test --workspace --locked
  # Architecture invariant: the analyzer knows nothing of LSP, async runtimes or JSON.
  for forbidden in tower-lsp-server tokio serde_json; do
    if cargo tree -p tpulint_analyzer --edges normal --prefix none --locked | grep -q "^$forbidden "; then
      echo "tpulint_analyzer must not depend on $forbidden" >&2
      exit 1
    fi
  done
fi

echo
echo "all test sections passed"
