#!/usr/bin/env bash
# Benchmarks `tpulint check` on a corpus of Python files against the parse-only floor and
# against `ruff check --select ALL`, single- and multi-threaded. Not a test: it prints numbers
# for docs/benchmarks.md.
#
#   bash bench/check_corpus.sh /path/to/corpus [threads...]      (default threads: 1 and nproc)
#
# Equalising: both tools get the same explicit list of .py files (so discovery rules do not
# differ), write their diagnostics to /dev/null, and run with RAYON_NUM_THREADS=N — both tpulint
# and ruff size their rayon pools from it. ruff runs with --isolated (no project config) and
# --no-cache. Each figure is the best of $TPULINT_BENCH_RUNS runs (default 3) of wall time.
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=${1:?usage: bench/check_corpus.sh CORPUS_DIR [threads...]}
shift
threads=("$@")
if [ ${#threads[@]} -eq 0 ]; then threads=(1 "$(nproc)"); fi
runs=${TPULINT_BENCH_RUNS:-3}

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release --locked -q -p tpulint
tpulint="$CARGO_TARGET_DIR/release/tpulint"

list=$(mktemp)
trap 'rm -f "$list"' EXIT
find "$corpus" -name '*.py' -type f | sort > "$list"
files=$(wc -l < "$list")
lines=$(tr '\n' '\0' < "$list" | xargs -0 cat | wc -l)
bytes=$(tr '\n' '\0' < "$list" | xargs -0 cat | wc -c)
mapfile -t paths < "$list"

# Best wall time in seconds of `runs` runs of the command.
best_of() {
  local best=""
  for _ in $(seq "$runs"); do
    local start end elapsed
    start=$(date +%s.%N)
    "$@" > /dev/null 2>&1 || true
    end=$(date +%s.%N)
    elapsed=$(echo "$end - $start" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$elapsed < $best" | bc -l)" = 1 ]; then best=$elapsed; fi
  done
  printf '%.3f' "$best"
}

rate() { printf '%.0f' "$(echo "$lines / $1" | bc -l)"; }

echo "corpus: $corpus"
echo "files: $files  lines: $lines  bytes: $bytes  runs: best of $runs"
echo "tpulint: $($tpulint --version)  ruff: $(ruff --version 2>/dev/null || echo 'not installed (pip install ruff)')"
printf '\n| threads | parse only (s) | tpulint check (s) | check / parse | ruff --select ALL (s) | tpulint lines/s | parse lines/s | ruff lines/s |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for n in "${threads[@]}"; do
  export RAYON_NUM_THREADS=$n
  parse=$(best_of "$tpulint" check --parse-only "${paths[@]}")
  check=$(best_of "$tpulint" check --select ALL --exit-zero --quiet --output-format concise "${paths[@]}")
  if command -v ruff > /dev/null; then
    ruff_time=$(best_of ruff check --isolated --no-cache --select ALL --exit-zero --quiet --output-format concise "${paths[@]}")
    ruff_rate=$(rate "$ruff_time")
  else
    ruff_time="-"
    ruff_rate="-"
  fi
  ratio=$(printf '%.2f' "$(echo "$check / $parse" | bc -l)")
  printf '| %s | %s | %s | %s× | %s | %s | %s | %s |\n' "$n" "$parse" "$check" "$ratio" "$ruff_time" \
    "$(rate "$check")" "$(rate "$parse")" "$ruff_rate"
done
