#!/usr/bin/env bash
# Build tools/calibrate/kernel_costs.c into a temp dir and run it.
# Usage: tools/calibrate/run.sh [kernel_costs options: -R rounds -r runs_per_round -m min_ms -v] [name ...]
# Needs: cc, >= 2 online CPUs (uses CPU 0 and 1). Root is not required; nothing system-wide is changed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fail() { echo "run.sh: error: $*" >&2; exit 1; }

command -v cc >/dev/null || fail "no C compiler 'cc' in PATH"
n="$(nproc)"
[ "$n" -ge 2 ] || fail "need at least 2 CPUs, nproc=$n"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cc -std=c11 -O2 -pthread -Wall -Wextra -o "$tmp/kernel_costs" "$here/kernel_costs.c" \
  || fail "build failed"

echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "uname $(uname -srvm)"
echo "loadavg $(cat /proc/loadavg)"
echo "thp_enabled $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo n/a)"
echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo n/a)"
echo "meltdown $(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2>/dev/null || echo n/a)"
if command -v dmesg >/dev/null && dmesg >/dev/null 2>&1; then
  dmesg | grep -i -E 'pv remote TLB flush|PV IPIs|tsc: Detected|Refined TSC' | sed 's/^/dmesg /' || true
fi
rc=0
"$tmp/kernel_costs" "$@" || rc=$?
echo "loadavg_after $(cat /proc/loadavg)"
[ "$rc" -eq 0 ] || fail "kernel_costs exited with status $rc"
