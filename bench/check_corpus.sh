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
# --no-cache. Each figure is the best of $TPULINT_BENCH_RUNS runs (default 3), wall and CPU time.
# TPULINT_BIN names a prebuilt release binary (default: cargo build --release -p tpulint).
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=${1:?usage: bench/check_corpus.sh CORPUS_DIR [threads...]}
shift
threads=("$@")
if [ ${#threads[@]} -eq 0 ]; then threads=(1 "$(nproc)"); fi
runs=${TPULINT_BENCH_RUNS:-3}

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
if [ -n "${TPULINT_BIN:-}" ]; then
  tpulint=$TPULINT_BIN
else
  cargo build --release --locked -q -p tpulint
  tpulint="$CARGO_TARGET_DIR/release/tpulint"
fi

list=$(mktemp)
cache=$(mktemp -d)
trap 'rm -rf "$list" "$cache"' EXIT
find "$corpus" -name '*.py' -type f | sort > "$list"
files=$(wc -l < "$list")
lines=$(tr '\n' '\0' < "$list" | xargs -0 cat | wc -l)
bytes=$(tr '\n' '\0' < "$list" | xargs -0 cat | wc -c)
mapfile -t paths < "$list"

# "wall cpu": the best wall time and the best user+system CPU time (seconds) of `runs` runs.
# CPU time is the steadier figure on a shared machine.
best_of() {
  local best_wall="" best_cpu=""
  for _ in $(seq "$runs"); do
    local TIMEFORMAT='%R %U %S' measured wall cpu
    measured=$( { time "$@" > /dev/null 2>&1; } 2>&1 | tail -1)
    read -r wall user system <<< "$measured"
    cpu=$(echo "$user + $system" | bc -l)
    if [ -z "$best_wall" ] || [ "$(echo "$wall < $best_wall" | bc -l)" = 1 ]; then best_wall=$wall; fi
    if [ -z "$best_cpu" ] || [ "$(echo "$cpu < $best_cpu" | bc -l)" = 1 ]; then best_cpu=$cpu; fi
  done
  printf '%.3f %.3f' "$best_wall" "$best_cpu"
}

rate() { printf '%.0f' "$(echo "$lines / $1" | bc -l)"; }

echo "corpus: $corpus"
echo "files: $files  lines: $lines  bytes: $bytes  runs: best of $runs"
echo "tpulint: $($tpulint --version)  ruff: $(ruff --version 2>/dev/null || echo 'not installed (pip install ruff)')"
printf '\nwall seconds (CPU seconds); lines/s from wall time\n'
printf '\n| threads | parse only | tpulint check (cold) | check / parse (wall, CPU) | no prefilter | prefilter gain (CPU) | ruff --select ALL | cold / ruff (wall, CPU) | warm (cache) | warm / cold ruff (wall) | tpulint lines/s | ruff lines/s |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|\n'
for n in "${threads[@]}"; do
  export RAYON_NUM_THREADS=$n
  read -r parse parse_cpu <<< "$(best_of "$tpulint" check --parse-only "${paths[@]}")"
  read -r check check_cpu <<< "$(best_of "$tpulint" check --no-cache --select ALL --exit-zero --quiet --output-format concise "${paths[@]}")"
  # The same check with the token prefilter off (a hidden benchmarking flag; same results).
  read -r unfiltered unfiltered_cpu <<< "$(best_of "$tpulint" check --no-cache --no-prefilter --select ALL --exit-zero --quiet --output-format concise "${paths[@]}")"
  gain=$(printf '%.2f×' "$(echo "$unfiltered_cpu / $check_cpu" | bc -l)")
  # Warm: the same check answered from a cache filled by one run beforehand.
  "$tpulint" check --cache-dir "$cache" --select ALL --exit-zero --quiet --output-format concise "${paths[@]}" > /dev/null 2>&1 || true
  read -r warm warm_cpu <<< "$(best_of "$tpulint" check --cache-dir "$cache" --select ALL --exit-zero --quiet --output-format concise "${paths[@]}")"
  if command -v ruff > /dev/null; then
    read -r ruff_time ruff_cpu <<< "$(best_of ruff check --isolated --no-cache --select ALL --exit-zero --quiet --output-format concise "${paths[@]}")"
    ruff_cell="$ruff_time ($ruff_cpu)"
    ruff_rate=$(rate "$ruff_time")
    cold_vs_ruff=$(printf '%.2f×, %.2f×' "$(echo "$check / $ruff_time" | bc -l)" "$(echo "$check_cpu / $ruff_cpu" | bc -l)")
    warm_vs_ruff=$(printf '%.3f×' "$(echo "$warm / $ruff_time" | bc -l)")
  else
    ruff_cell="-"
    ruff_rate="-"
    cold_vs_ruff="-"
    warm_vs_ruff="-"
  fi
  ratio=$(printf '%.2f×, %.2f×' "$(echo "$check / $parse" | bc -l)" "$(echo "$check_cpu / $parse_cpu" | bc -l)")
  printf '| %s | %s (%s) | %s (%s) | %s | %s (%s) | %s | %s | %s | %s (%s) | %s | %s | %s |\n' "$n" "$parse" "$parse_cpu" "$check" "$check_cpu" \
    "$ratio" "$unfiltered" "$unfiltered_cpu" "$gain" "$ruff_cell" "$cold_vs_ruff" "$warm" "$warm_cpu" "$warm_vs_ruff" "$(rate "$check")" "$ruff_rate"
done
