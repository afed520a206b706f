#!/usr/bin/env bash
# Records the real torch_xla traces under server/trace/tests/real/ (run from anywhere).
#
# Needs a Python environment with the real packages, e.g.
#   python3 -m venv v && v/bin/pip install torch==2.9.0 torch-xla==2.9.0   (about 7 GB)
# and a built tpulint (cargo build -p tpulint). Runs on the XLA CPU device (PJRT_DEVICE=CPU).
#
#   PYTHON=/path/to/v/bin/python server/trace/tests/real/record.sh [scenario…]
#
# For each scenario it runs `tpulint trace run --keep-logs` on its train.py, then writes into the
# scenario's directory the raw logs with paths sanitised (the scenario directory becomes
# /project, the environment's prefix /venv) and what tpulint printed (tpulint-output.txt).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../../.." && pwd)"
python="${PYTHON:?set PYTHON to an interpreter with torch==2.9.0 and torch-xla==2.9.0}"
tpulint="${TPULINT:-$repo/target/debug/tpulint}"
prefix="$("$python" -c 'import sys; print(sys.prefix)')"
base_prefix="$("$python" -c 'import sys; print(sys.base_prefix)')"
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  scenarios=(item_per_step shapes_per_step cpu_fallback never_syncs clean_loop compiled_dynamo)
fi
sanitise() {
  sed -e "s|$1|/project|g" -e "s|$prefix|/venv|g" -e "s|$base_prefix|/python|g" -e "s|$repo|/tpulint|g"
}
for scenario in "${scenarios[@]}"; do
  directory="$here/$scenario"
  work="$(mktemp -d)"
  cp "$directory/train.py" "$work/"
  raw="$(mktemp -d)"
  echo "== $scenario" >&2
  status=0
  (cd "$work" && PJRT_DEVICE=CPU nice "$tpulint" trace run --root . --keep-logs "$raw" -- "$python" train.py) \
    > "$work/output.txt" 2> "$work/stderr.txt" || status=$?
  work_real="$(cd "$work" && pwd -P)"
  mkdir -p "$directory/logs"
  rm -f "$directory/logs/"*
  for log in "$raw"/*; do
    name="$(basename "$log")"
    case "$name" in hook-*.json) name="hook.json" ;; esac
    sanitise "$work_real" < "$log" | sanitise "$work" > "$directory/logs/$name"
  done
  { echo "\$ tpulint trace run -- python train.py   # exit status $status"; sanitise "$work_real" < "$work/output.txt" | sanitise "$work"; } \
    > "$directory/tpulint-output.txt"
  rm -rf "$work" "$raw"
done
