#!/usr/bin/env bash
# Records a real partial kernel build (make -jN kernel/ mm/ fs/) with `tlblab trace record
# --events tlb,sched`, system-wide, plus a side channel of sched_process_fork events (parent ->
# child) in a tracefs instance of its own, so that the analysis can attribute events to the
# build's process tree. See tools/calibrate/results/kbuild-switches-2026-11-25.md.
#
# usage: kbuild_switches.sh -s SRC -j JOBS -w SECONDS -o OUTDIR [-n NICE] [-t TLBLAB]
# -n runs the build at that nice value (e.g. -20: on a machine busy with other work, the
# build then runs nearly as if alone, and the CPUs it leaves go to the other work)
# Must run as root. SRC must be configured and prepared (make defconfig; make -jN prepare).
set -euo pipefail
src= jobs=2 window=90 out= nice=0 tlblab=target/release/tlblab
while getopts s:j:w:o:n:t: o; do
  case $o in s) src=$OPTARG;; j) jobs=$OPTARG;; w) window=$OPTARG;; o) out=$OPTARG;; n) nice=$OPTARG;;
             t) tlblab=$OPTARG;; *) exit 2;; esac
done
[ -n "$src" ] && [ -n "$out" ] || { echo "usage: $0 -s SRC -j N -w S -o OUTDIR" >&2; exit 2; }
tlblab=$(readlink -f "$tlblab"); out=$(readlink -m "$out"); mkdir -p "$out"
tr=$(awk '$3 == "tracefs" {print $2; exit}' /proc/mounts)
[ -n "$tr" ] || { mount -t tracefs nodev /sys/kernel/tracing; tr=/sys/kernel/tracing; }
inst="$tr/instances/kbswitch-$$"
catpid=
cleanup() {
  [ -n "$catpid" ] && kill "$catpid" 2>/dev/null || true
  if [ -d "$inst" ]; then
    echo 0 > "$inst/tracing_on" || true
    echo 0 > "$inst/events/sched/sched_process_fork/enable" || true
    rmdir "$inst" || true
  fi
}
trap cleanup EXIT

# Clean the outputs of the target dirs (as kbuild_mix.sh does).
for d in kernel mm fs; do
  find "$src/$d" \( -name '*.o' -o -name '*.a' -o -name '.*.cmd' -o -name 'modules.order' \
      -o -name '*.mod' -o -name '*.mod.c' -o -name '*.ko' -o -name '*.lds' \) -type f -delete
done
sync

# Side channel: fork events with parent and child pid.
mkdir "$inst"
echo 4096 > "$inst/buffer_size_kb"
echo mono > "$inst/trace_clock"
echo 1 > "$inst/events/sched/sched_process_fork/enable"
cat "$inst/trace_pipe" > "$out/forks.txt" &
catpid=$!

cat /proc/stat > "$out/stat.before"
cd "$src"
"$tlblab" trace record --force --events tlb,sched -o "$out/build.flushtrace" -- \
  nice -n "$nice" /usr/bin/time -v -o "$out/time.txt" timeout -s INT "$window" make -j"$jobs" kernel/ mm/ fs/ \
  > "$out/make.log" 2> "$out/record.log" || echo "recorder/make exit $?" >> "$out/record.log"
cat /proc/stat > "$out/stat.after"
sleep 0.5
