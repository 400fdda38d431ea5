#!/bin/bash
# The page-reuse profile of gcc's cc1 compiling one kernel file: the kbuild model's compiler
# reference stream (docs/workloads.md; results in results/cc1-page-reuse-*.md).
#
#   tools/calibrate/cc1_page_reuse.sh -s LINUX_SOURCE [-f mm/mmzone] [-o OUTDIR] [-l LACKEY_INSNS]
#
# LINUX_SOURCE is a configured tree (`make defconfig && make prepare`). The script:
#  1. takes the file's cc1 command line from kbuild (`make V=1` and `gcc -###`);
#  2. times cc1 natively five times (user seconds);
#  3. runs it under cachegrind with 4 KiB "lines", once per size (64 to 1024 entries) with
#     fully associative L1s (D1: data, I1: fetches) and once with Skylake's TLB geometry
#     (dTLB 64 4-way, iTLB 128 8-way, STLB 1536 12-way): a TLB is a cache of pages, so these
#     are the program's LRU miss counts at each size;
#  4. optionally (-l N) pipes lackey's trace of the first N instructions through page_reuse.c
#     for the stack-distance histogram (lackey is slow: about 0.8 M references per second).
# Needs valgrind and gcc; writes only OUTDIR (default ./cc1-page-reuse).
set -euo pipefail

src="" file="mm/mmzone" out="./cc1-page-reuse" lackey=0
while getopts "s:f:o:l:" opt; do
  case $opt in
    s) src=$OPTARG ;;
    f) file=$OPTARG ;;
    o) out=$OPTARG ;;
    l) lackey=$OPTARG ;;
    *) echo "usage: $0 -s LINUX_SOURCE [-f FILE_WITHOUT_.c] [-o OUTDIR] [-l LACKEY_INSNS]" >&2; exit 2 ;;
  esac
done
[ -n "$src" ] && [ -f "$src/Makefile" ] || { echo "$0: -s: not a kernel tree: '$src'" >&2; exit 2; }
[ -f "$src/$file.c" ] || { echo "$0: -f: no such source: $src/$file.c" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind is not installed" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

cd "$src"
rm -f "$file.o"
gcc_cmd=$(make V=1 "$file.o" 2>&1 | grep -E "^\s*gcc .* -c -o $file.o" | head -1)
[ -n "$gcc_cmd" ] || { echo "$0: kbuild printed no gcc command for $file.o" >&2; exit 1; }
cc1_cmd=$(eval "$gcc_cmd -###" 2>&1 | grep -E '/cc1 ' | head -1)
[ -n "$cc1_cmd" ] || { echo "$0: gcc -### printed no cc1 command" >&2; exit 1; }
echo "$cc1_cmd" > "$out/cc1-command.txt"

for i in 1 2 3 4 5; do
  eval "/usr/bin/time -f '%U' $cc1_cmd" 2>&1 >/dev/null | tail -1
done > "$out/user-seconds.txt"

cg() { # name, valgrind cache options
  local name=$1; shift
  eval "valgrind --tool=cachegrind --cache-sim=yes $* --cachegrind-out-file=/dev/null $cc1_cmd" \
    > "$out/cachegrind-$name.txt" 2>&1
}
for n in 64 128 256 512 1024; do
  b=$((n * 4096))
  cg "fa$n" "--I1=$b,$n,4096 --D1=$b,$n,4096 --LL=$((2 * b)),$((2 * n)),4096"
done
cg skylake "--I1=524288,8,4096 --D1=262144,4,4096 --LL=6291456,12,4096"

if [ "$lackey" -gt 0 ]; then
  gcc -O2 -o "$out/page_reuse" "$here/page_reuse.c"
  # lackey cannot stop by itself: head ends the trace after N instruction lines' worth.
  eval "valgrind --tool=lackey --trace-mem=yes --log-fd=3 $cc1_cmd" 3>&1 >/dev/null 2>/dev/null \
    | awk -v n="$lackey" '/^I /{ if (++i > n) exit } { print }' \
    | "$out/page_reuse" > "$out/lackey-reuse.txt" || true
fi
grep -H -E 'I +refs|I1 +misses|D +refs|D1 +misses|LL misses' "$out"/cachegrind-*.txt
