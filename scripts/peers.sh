#!/usr/bin/env bash
# Measures tlblab's live scenarios beside the peer benchmarks they follow, on this machine
# (docs/workloads.md, "Checked against peers"):
#
#   - will-it-scale's tlb_flush2_threads and tlb_flush2_processes at 1 and 2 tasks, beside
#     `tlblab bench tlb-flush2 --tasks 1,2 --mode threads,processes`;
#   - stress-ng's madvise stressor (Debian's stress-ng) at 1 and 2 workers, beside
#     `tlblab bench madvise-scale --tasks 1,2` (not the same work: the doc says why).
#
#   scripts/peers.sh [RUNS] [SECONDS]
#
# RUNS (default 3) rounds; in each, every configuration runs the peer once (measuring SECONDS,
# default 5, after its own warm-up: will-it-scale discards 5 one-second samples) and then ours
# once (one `tlblab bench --no-trace` run of SECONDS after 1 s of warm-up: the peers trace
# nothing either), so that both see the same background load. Prints median, minimum and
# maximum of the RUNS samples per configuration. Needs root (apt-get installs libhwloc-dev and
# stress-ng when missing; tlblab bench reads its counters) and git, cc and make.
# WIS_DIR (default /tmp/wis) is where will-it-scale is cloned and built; TLBLAB the tlblab
# binary (default: target/release/tlblab, built if missing). Nothing is installed into the
# project: the peers are a manual cross-check, not dependencies.
set -euo pipefail
runs=${1:-3}
secs=${2:-5}
wis=${WIS_DIR:-/tmp/wis}
root=$(cd "$(dirname "$0")/.." && pwd)
tlblab=${TLBLAB:-$root/target/release/tlblab}
[ "$(id -u)" -eq 0 ] || { echo "peers: run as root" >&2; exit 2; }

need=()
[ -f /usr/include/hwloc.h ] || need+=(libhwloc-dev)
command -v stress-ng >/dev/null 2>&1 || need+=(stress-ng)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ ! -x "$wis/tlb_flush2_threads" ]; then
  [ -d "$wis/.git" ] || git clone -q https://github.com/antonblanchard/will-it-scale "$wis"
  make -s -C "$wis" tlb_flush2_threads tlb_flush2_processes
fi
[ -x "$tlblab" ] || (cd "$root" && cargo build -q --release -p tlblab-cli)

# median min max of the numbers on standard input
stats() {
  python3 -c 'import sys, statistics as s; v = [float(x) for x in sys.stdin.read().split()]; print(f"median {s.median(v):,.0f}  min {min(v):,.0f}  max {max(v):,.0f}  ({len(v)} samples)")'
}

echo "host: $("$tlblab" sim machines show host 2>/dev/null | head -1)"
echo "kernel: $(uname -r), $(nproc) CPUs"
echo
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# One tlblab bench run of SECONDS after 1 s of warm-up: its value (ops/s summed over tasks).
ours() {
  "$tlblab" bench "$@" --runs 1 --run-ms $((secs * 1000)) --warmup-ms 1000 --no-overhead --no-trace -q \
    --force -o "$out/b.json" >/dev/null
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["configs"][0]["runs"][0]["value"])' \
    "$out/b.json"
}
# The peer and ours alternate, RUNS rounds, so that both see the same background load.
for mode in threads processes; do
  for t in 1 2; do
    for _ in $(seq "$runs"); do
      "$wis/tlb_flush2_$mode" -t "$t" -s "$secs" | sed -n 's/^average://p' >>"$out/wis-$mode-$t"
      ours tlb-flush2 --tasks "$t" --mode "$mode" >>"$out/ours-$mode-$t"
    done
  done
done
for n in 1 2; do
  for _ in $(seq "$runs"); do
    stress-ng --madvise "$n" -t "$secs" --metrics-brief 2>&1 |
      awk '$4 == "madvise" && $9 ~ /^[0-9.]+$/ { print $9 }' | tail -1 >>"$out/stress-$n"
    ours madvise-scale --tasks "$n" >>"$out/scale-$n"
  done
done

echo "tlb_flush2, iterations/s summed over tasks; will-it-scale: its average: line; tlblab: bench"
for mode in threads processes; do
  for t in 1 2; do
    printf '  will-it-scale tlb_flush2_%-9s -t %s             ' "$mode" "$t"
    stats <"$out/wis-$mode-$t"
    printf '  tlblab bench tlb-flush2 --mode %-9s --tasks %s  ' "$mode" "$t"
    stats <"$out/ours-$mode-$t"
  done
done
echo "stress-ng madvise: bogo ops/s (real time; a bogo op is a whole 4 MiB round, see the doc)"
echo "tlblab madvise-scale: ops/s summed over tasks (an op is a write and a one-page DONTNEED)"
for n in 1 2; do
  printf '  stress-ng --madvise %s              ' "$n"; stats <"$out/stress-$n"
  printf '  tlblab bench madvise-scale --tasks %s  ' "$n"; stats <"$out/scale-$n"
done
