#!/usr/bin/env bash
# Runs every benchmark of the project package by package, COUNT times each
# (several short runs rather than one long one), and appends the raw go test
# output to bench/results/TOPIC/DATE-WHAT.txt (TOPIC all and WHAT run unless
# set) with the machine and the load average before and after each package.
# benchstat reads the file as it is.
#
#   bench/record.sh                       every package, COUNT=3, BENCHTIME=1s
#   COUNT=5 TOPIC=outbox WHAT=enqueue bench/record.sh ./outbox/     some packages only
#   TELEGRAM_RATE_BENCH=60s bench/record.sh ./adapters/telegram/
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-3}
BENCHTIME=${BENCHTIME:-1s}
BENCH=${BENCH:-.}
TOPIC=${TOPIC:-all}
WHAT=${WHAT:-run}
out=bench/results/$TOPIC/$(date -u +%F)-$WHAT.txt
mkdir -p "bench/results/$TOPIC"
make --no-print-directory bench-deps
if [ $# -eq 0 ]; then
  set -- $(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... |
    while read -r p; do
      d=$(go list -f '{{.Dir}}' "$p")
      grep -qs '^func Benchmark' "$d"/*_test.go && echo "$p"
    done)
fi
{
  echo "# $(date -u +%FT%TZ) $(uname -sr), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(go version | cut -d' ' -f3), node $(node --version 2>/dev/null || echo none)"
  echo "# COUNT=$COUNT BENCHTIME=$BENCHTIME BENCH=$BENCH TELEGRAM_RATE_BENCH=${TELEGRAM_RATE_BENCH:-}"
} | tee -a "$out"
for p in "$@"; do
  echo "# load before $p: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
  go test -run '^$' -bench "$BENCH" -benchmem -benchtime "$BENCHTIME" -count "$COUNT" -timeout 60m "$p" 2>&1 | tee -a "$out"
  echo "# load after $p: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
done
