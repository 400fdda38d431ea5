#!/usr/bin/env bash
# What tracing tlb:tlb_flush costs the traced workload: `tlblab trace record` against
# `perf record -e tlb:tlb_flush`, on the same workload, as root.
#
#   scripts/tracer-overhead.sh [RUNS] [BUSY]
#
# The workload is tlblab's madvise-busy scenario (BUSY=0: one thread, one local flush per
# operation, the highest flush rate; BUSY=1: plus a sibling thread, so every flush is also a
# shootdown). Four sessions of RUNS runs of 300 ms each run one after another: bare, under
# `tlblab trace record` (system-wide), under `perf record -a`, and bare again (to see the
# machine's drift). Each traced session is compared with the first bare one by `tlblab compare`
# (Welch's t-test, Mann-Whitney U, bootstrap 95% CI of the change, verdict).
set -euo pipefail
runs=${1:-10}
busy=${2:-0}
cd "$(dirname "$0")/.."
cargo build --release -q
tlblab=$PWD/target/release/tlblab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bench=("$tlblab" bench madvise-busy --busy "$busy" --runs "$runs" --run-ms 300 --warmup-ms 100
       --no-overhead --no-trace -q --baseline-dir "$work/baselines")

"${bench[@]}" --save-baseline bare > /dev/null
"$tlblab" trace record -q -o "$work/t.flushtrace" -- "${bench[@]}" --save-baseline tlblab > /dev/null
perf record -q -e tlb:tlb_flush -a -o "$work/perf.data" -- "${bench[@]}" --save-baseline perf > /dev/null 2> "$work/perf.err" || true
"${bench[@]}" --save-baseline bare-again > /dev/null

echo "== tlblab trace record =="
"$tlblab" trace dump "$work/t.flushtrace" --json | tail -1 | python3 -c '
import json, sys
t = json.loads(sys.stdin.read())["trailer"]
print("recorded %d records, lost %d events" % (t["records"], sum(l["events"] for l in t["losses"])))'
"$tlblab" compare bare tlblab --baseline-dir "$work/baselines"
echo "== perf record -e tlb:tlb_flush -a =="
cat "$work/perf.err"
perf report -i "$work/perf.data" --stats 2>/dev/null | grep -E "LOST|SAMPLE" || true
"$tlblab" compare bare perf --baseline-dir "$work/baselines"
echo "== drift: bare again =="
"$tlblab" compare bare bare-again --baseline-dir "$work/baselines"
