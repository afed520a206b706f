#!/usr/bin/env bash
# Runs the real-client end-to-end tests against a built `tpulint` binary:
#   tests/lsp-clients/run.sh /path/to/tpulint
# Needs `nvim` (Debian neovim), `emacs` with Eglot (Debian emacs-nox, elpa-eglot) and `pytest-lsp`
# (PyPI); scripts/test-all.sh installs them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
binary=$(realpath "${1:?usage: run.sh /path/to/tpulint}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "-- Neovim $(nvim --version | head -1)"
cp "$here/train.py" "$work/train.py"
SERVER_CMD="$binary server" PYFILE="$work/train.py" OUTFILE="$work/nvim.json" \
  timeout 120 nvim --headless --clean -c "luafile $here/nvim-e2e.lua"

echo "-- $(emacs --version | head -1) + Eglot"
cp "$here/train.py" "$work/emacs-train.py"
SERVER_CMD="$binary server" PYFILE="$work/emacs-train.py" \
  timeout 120 emacs --batch -l "$here/emacs-e2e.el" 2>"$work/emacs.log" || { tail -30 "$work/emacs.log"; exit 1; }

echo "-- pytest-lsp"
status=0
(cd "$here" && TPULINT_SERVER="$binary server" timeout 300 python3 -m pytest -q -p no:cacheprovider test_pytest_lsp.py) || status=$?
# Exit code 5 means pytest collected no tests: that is a broken suite, never a pass.
if [[ $status -eq 5 ]]; then
  echo "pytest-lsp collected no tests" >&2
  exit 1
fi
exit $status
