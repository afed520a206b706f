#!/usr/bin/env bash
# Runs every tpulint test, installing what the tests need first (idempotent; works on a fresh
# machine with the package registries only). Sections can be skipped with TPULINT_SKIP, e.g.
# TPULINT_SKIP="lsp vscode-e2e"; the sections: rust (doctor), realcode, fuzz, lsp, pip, vscode, wasm, vscode-e2e.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

skip() { [[ " ${TPULINT_SKIP:-} " == *" $1 "* ]]; }
# Each header says how long the run has taken so far, so a slow section shows in the CI log.
section() { printf '\n==== %s ==== (%dm%02ds into the run)\n' "$1" $((SECONDS / 60)) $((SECONDS % 60)); }

e2e_wanted() { ! skip vscode && ! skip vscode-e2e; }

# ---- Debian packages the sections need, in one apt transaction (none on a machine that has them) ----
apt_missing=()
want_deb() { for package in "$@"; do dpkg -s "$package" >/dev/null 2>&1 || apt_missing+=("$package"); done; }
if ! skip lsp; then
  command -v nvim >/dev/null || want_deb neovim
  command -v emacs >/dev/null || want_deb emacs-nox
  want_deb elpa-eglot
fi
if ! skip wasm || e2e_wanted; then
  command -v chromium >/dev/null || want_deb chromium
  want_deb fonts-liberation # what chromium recommends for text; screenshots need real fonts
fi
# code-server's native modules and ripgrep stand-in; colour emoji for the report screenshots.
if e2e_wanted; then want_deb ripgrep libkrb5-dev pkg-config build-essential fonts-noto-color-emoji; fi
if ((${#apt_missing[@]})); then
  section "installing ${apt_missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${apt_missing[@]}" >/dev/null
fi

# code-server for the VS Code end-to-end tests takes minutes to install on a fresh machine (npm,
# native modules): do it in the background while the Rust sections build, and wait for it there.
if e2e_wanted; then
  e2e_setup_log=$(mktemp)
  bash tests/vscode-e2e/setup.sh >"$e2e_setup_log" 2>&1 &
  e2e_setup_pid=$!
fi

# ---- Doctor prerequisites: its tests build real virtual environments (python3 -m venv) ----
if ! skip rust && ! skip doctor; then
  section "doctor prerequisites"
  # The tests prefer /usr/bin/python3 (a pyenv shim costs half a second per start).
  if [[ -x /usr/bin/python3 ]]; then export TPULINT_TEST_PYTHON=/usr/bin/python3; else export TPULINT_TEST_PYTHON=$(command -v python3); fi
  probe_dir=$(mktemp -d)
  if ! "$TPULINT_TEST_PYTHON" -m venv --without-pip "$probe_dir/venv" >/dev/null 2>&1; then
    # Debian ships venv separately; install it only when it is missing.
    apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq python3-venv
    "$TPULINT_TEST_PYTHON" -m venv --without-pip "$probe_dir/venv"
  fi
  rm -rf "$probe_dir"
fi

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
  # The IDE layer is sans-IO: shared by the CLI, the server and the wasm build, it runs no
  # async runtime and speaks no LSP transport. tpulint_trace, shared by the CLI and the
  # server, neither.
  for crate in tpulint_ide tpulint_trace; do
    for forbidden in tower-lsp-server tokio; do
      if cargo tree -p "$crate" --edges normal --prefix none --locked | grep -q "^$forbidden "; then
        echo "$crate must not depend on $forbidden" >&2
        exit 1
      fi
    done
  done
fi

# ---- Real code: check, --fix and --fix --unsafe-fixes on pinned releases from PyPI (cached in
# .ci-cache/realcode/): no crash, fixes keep files compiling, add no unguarded optional import,
# and converge (scripts/real_code_check.py) ----
if ! skip realcode; then
  section "realcode"
  bash scripts/real-code-harness.sh
fi

# ---- Fuzz smoke: every cargo-fuzz target for a short while from the seed corpus and the saved
# regressions (fuzz/, outside the workspace; see CONTRIBUTING.md "Fuzzing"). A crash fails CI and
# leaves the input under fuzz/artifacts/. TPULINT_FUZZ_SECONDS sets the time per target. ----
if ! skip fuzz; then
  section "fuzz"
  command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz@0.13.2
  python3 fuzz/seed-corpus.py
  fuzz_seconds=${TPULINT_FUZZ_SECONDS:-30}
  # RUSTC_BOOTSTRAP: cargo-fuzz passes -Z flags, which the stable toolchain accepts with it.
  # A smoke run builds unoptimised (`--dev`, debug assertions on): minutes less to compile on a
  # fresh machine, and still thousands of inputs per target; campaigns use `-O` (CONTRIBUTING.md).
  (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz build --sanitizer none --dev)
  for target in check_and_fix notebook lsp_edits lsp_frames; do
    (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run --sanitizer none --dev "$target" \
      "corpus/$target" "regressions/$target" -- \
      -max_total_time="$fuzz_seconds" -max_len=4096 -timeout=30 -rss_limit_mb=4096 -print_final_stats=1)
  done
fi

# ---- Language server with real clients: Neovim's built-in client, Emacs + Eglot, pytest-lsp ----
if ! skip lsp; then
  section "lsp"
  python3 -c 'import pytest_lsp' 2>/dev/null || python3 -m pip install --quiet pytest-lsp
  cargo build --locked -p tpulint
  tests/lsp-clients/run.sh "${CARGO_TARGET_DIR:-target}/debug/tpulint"
fi

# ---- Installing like ruff: the wheel (maturin) and `pip install .` in fresh virtual environments,
# and the pre-commit hook under real pre-commit (tests/install/run.sh says what and how long) ----
if ! skip pip; then
  section "pip"
  pip_python=/usr/bin/python3
  [[ -x "$pip_python" ]] || pip_python=$(command -v python3)
  probe_dir=$(mktemp -d)
  if ! "$pip_python" -m venv "$probe_dir/venv" >/dev/null 2>&1; then
    # Debian ships ensurepip (what `python3 -m venv` needs for pip) in python3-venv.
    apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq python3-venv
  fi
  rm -rf "$probe_dir"
  cargo build --locked -p tpulint
  TPULINT_TEST_PYTHON=$pip_python bash tests/install/run.sh "${CARGO_TARGET_DIR:-target}/debug/tpulint"
fi

# ---- VS Code extension: type check, lint, unit tests (the end-to-end tests run after wasm) ----
if ! skip vscode; then
  section "vscode"
  # npm ci only when package-lock.json changed since the last install (it wipes node_modules).
  lock_hash=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [[ "$(cat node_modules/.tpulint-lock-hash 2>/dev/null)" != "$lock_hash" ]]; then
    npm ci --no-audit --no-fund --loglevel=error
    echo "$lock_hash" > node_modules/.tpulint-lock-hash
  fi
  npm run --silent check
  npm run --silent test:unit
fi

# ---- WebAssembly: build (size reported against its budget), compare with the CLI on every fixture, the web
# extension's worker server, and the playground in headless Chromium ----
if ! skip wasm; then
  section "wasm"
  cargo build --locked -p tpulint # the native CLI the wasm output must equal
  # Enforces the module's budget (1 MB raw, 300 KB gzipped): over it, build.sh --check-size prints
  # both sizes and fails the section. The rule docs are not in the module (rule-docs.json beside
  # it); see docs/benchmarks.md for where the bytes go.
  TPULINT_BIN=${CARGO_TARGET_DIR:-$root/target}/debug/tpulint bash server/wasm/build.sh --check-size
  # The browser's language server (the `language-server` feature, off in the workspace build).
  cargo test --locked -p tpulint_wasm --features language-server
  [[ -d node_modules/playwright-core && -d node_modules/vscode-languageserver ]] || npm ci --no-audit --no-fund
  TPULINT_BIN=${CARGO_TARGET_DIR:-$root/target}/debug/tpulint \
    node --test server/wasm/tests/fixtures.test.mjs server/wasm/tests/playground.test.mjs
  npm run --silent build:web
  # The web worker's server over a MessageChannel, and the parity test: one LSP session replayed
  # against `tpulint server` and the web worker's server, with identical answers required.
  TPULINT_BIN=${CARGO_TARGET_DIR:-$root/target}/debug/tpulint npm run --silent test:web
  # The worker bundle itself in a browser worker (headless Chromium), as VS Code for the web runs it.
  node --test server/wasm/tests/web-worker.test.mjs
fi

# ---- VS Code end to end: the VSIX installed in real VS Code (code-server 4.100.3 + chromium) ----
# After the wasm section: the VSIX carries the web extension, which needs the wasm package.
if e2e_wanted; then
  section "vscode-e2e"
  # code-server and playwright-core (started in the background above; cached machine-wide).
  wait "$e2e_setup_pid" || { cat "$e2e_setup_log"; echo "tests/vscode-e2e/setup.sh failed" >&2; exit 1; }
  cargo build --locked -p tpulint
  # The VSIX carries the debug server binary here (a release build would add minutes to CI);
  # `npm run package` without the variable builds the release VSIX that ships.
  package_log=$(mktemp)
  TPULINT_SERVER_BINARY="${CARGO_TARGET_DIR:-$root/target}/debug/tpulint" npm run --silent package | tee "$package_log"
  vsix=$(sed -n 's/^packaged \([^:]*\.vsix\):.*/\1/p' "$package_log")
  bash tests/vscode-e2e/run.sh "$vsix"
fi

echo
echo "all test sections passed in $((SECONDS / 60))m$((SECONDS % 60))s"
