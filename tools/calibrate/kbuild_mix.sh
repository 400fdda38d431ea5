#!/usr/bin/env bash
# Measure the process mix of a real (partial) kernel build on this machine, as workload-model
# inputs for the "kbuild" scenario: forks/execs per second, process lifetimes by comm, user page
# faults per process, mmap/munmap/... syscall counts and munmap sizes, and tlb:tlb_flush events by
# reason and size.
#
# Usage (as root):
#   tools/calibrate/kbuild_mix.sh -s SRC [-j N] [-w SECONDS] [-o OUTDIR] [-d RAWDIR] [TARGET ...]
#     -s SRC     kernel source tree, already configured (e.g. `make defconfig`)       (required)
#     -j N       make -jN                                                             (default 2)
#     -w SECONDS measurement window: make is stopped with SIGINT after this long      (default 180)
#     -o OUTDIR  where the small text/CSV summaries go                (default ./kbuild-mix-jN)
#     -d RAWDIR  where perf.data and the decoded trace go (large: ~1 GB per 3 min)
#                                                                     (default /tmp/kbuild-mix-jN)
#     TARGET     make targets                                        (default: kernel/ mm/ fs/)
#
# What it does:
#   1. `make -jN prepare` (untraced, so host tools, objtool and generated headers exist).
#   2. Deletes the build outputs (*.o, *.a, .*.cmd, modules.order, ...) under the target dirs,
#      so every run compiles the same files from scratch.
#   3. Snapshots /proc/stat, /proc/vmstat and /proc/interrupts; starts, system-wide (-a),
#        perf stat  : exact counts (page faults, tracepoints, syscalls),
#        perf record: every event of tlb:tlb_flush, sched:sched_process_{fork,exec,exit},
#                     exceptions:page_fault_user, exceptions:page_fault_kernel (user addresses
#                     only), syscalls:sys_enter_{mmap,munmap,mprotect,brk,madvise,execve,clone,
#                     clone3,vfork,fork,wait4};
#        a sampler (one python process, no forks) that reads VmHWM of every cc1 every 0.1 s.
#   4. Runs `/usr/bin/time -v timeout -s INT W make -jN TARGET...`, stops the recorders,
#      snapshots /proc again, decodes perf.data with `perf script` and summarises it.
#
# System state: the script uses perf_event_open (perf) only. It creates no tracefs instance and
# writes no tracefs file. tracefs must be mounted for perf to resolve tracepoints: if it is not
# mounted, the script mounts it at /sys/kernel/tracing and unmounts it on exit. All processes the
# script starts (perf, the sampler, make) are stopped on every exit path by the trap.
set -euo pipefail

fail() { echo "kbuild_mix.sh: error: $*" >&2; exit 1; }

jobs=2; window=180; src=""; out=""; raw=""
while getopts "s:j:w:o:d:h" opt; do
  case "$opt" in
    s) src="$OPTARG" ;; j) jobs="$OPTARG" ;; w) window="$OPTARG" ;;
    o) out="$OPTARG" ;; d) raw="$OPTARG" ;;
    h) sed -n '2,20p' "$0"; exit 0 ;;
    *) fail "bad option (see -h)" ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@"); [ "${#targets[@]}" -gt 0 ] || targets=(kernel/ mm/ fs/)
[ -n "$src" ] || fail "-s SRC (a configured kernel source tree) is required"
[[ "$jobs" =~ ^[0-9]+$ && "$window" =~ ^[0-9]+$ ]] || fail "-j and -w take integers"
out="${out:-$PWD/kbuild-mix-j$jobs}"; raw="${raw:-/tmp/kbuild-mix-j$jobs}"

[ "$(id -u)" -eq 0 ] || fail "must run as root (system-wide perf recording of tracepoints)"
command -v perf >/dev/null || fail "perf not found (apt-get install linux-perf)"
[ -x /usr/bin/time ] || fail "/usr/bin/time not found (apt-get install time)"
py=/usr/bin/python3; [ -x "$py" ] || py="$(command -v python3)" || fail "python3 not found"
[ -f "$src/.config" ] && [ -f "$src/Makefile" ] || fail "$src is not a configured kernel tree"

# ---- tracefs (needed by perf to resolve tracepoint names) ----
tracefs=/sys/kernel/tracing; mounted_by_us=0
if [ ! -d "$tracefs/events" ]; then
  if [ -d /sys/kernel/debug/tracing/events ]; then tracefs=/sys/kernel/debug/tracing
  else
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null \
      || fail "no tracefs: cannot mount tracefs at /sys/kernel/tracing"
    mounted_by_us=1
  fi
fi
for ev in tlb/tlb_flush sched/sched_process_fork exceptions/page_fault_user syscalls/sys_enter_munmap; do
  [ -d "$tracefs/events/$ev" ] || fail "tracepoint $ev not available in $tracefs"
done

# ---- cleanup on every exit path ----
pids_to_stop=(); buildpid=""
cleanup() {
  local rc=$? t
  trap - EXIT INT TERM HUP
  # The build: `timeout` (child of /usr/bin/time) leads its own process group; SIGINT that group.
  if [ -n "$buildpid" ]; then
    for t in $(pgrep -P "$buildpid" 2>/dev/null || true); do
      kill -INT -- "-$t" 2>/dev/null || kill -INT "$t" 2>/dev/null || true
    done
  fi
  for p in "${pids_to_stop[@]}"; do
    if kill -0 "$p" 2>/dev/null; then kill -INT "$p" 2>/dev/null || true; fi
  done
  for p in "${pids_to_stop[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [ "$mounted_by_us" -eq 1 ]; then umount /sys/kernel/tracing 2>/dev/null || true; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP

mkdir -p "$out" "$raw"
snap() {  # $1 = suffix
  cat /proc/stat > "$raw/stat.$1"; cat /proc/vmstat > "$raw/vmstat.$1"
  cat /proc/interrupts > "$raw/interrupts.$1"
}

# ---- machine facts ----
{
  echo "date_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "uname_r $(uname -r)"
  echo "uname_v $(uname -v)"
  echo "nproc $(nproc)"
  grep -m1 'model name' /proc/cpuinfo | sed 's/^/cpuinfo /'
  grep -m1 -E '^cpu family\s' /proc/cpuinfo | sed 's/^/cpuinfo /'
  grep -m1 -E '^model\s' /proc/cpuinfo | sed 's/^/cpuinfo /'
  echo "cpuinfo flags_pcid_invpcid $(grep -m1 -o -w -E 'pcid|invpcid' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "memtotal $(grep MemTotal /proc/meminfo)"
  echo "meltdown $(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2>/dev/null || echo n/a)"
  echo "thp $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo n/a)"
  echo "gcc $(gcc --version | head -1)"
  echo "make $(make --version | head -1)"
  echo "perf $(perf --version)"
  echo "src_version $(make -s -C "$src" kernelversion 2>/dev/null)"
  echo "jobs $jobs window_s $window targets ${targets[*]}"
  dmesg 2>/dev/null | grep -i -E 'pv remote TLB flush|PV IPIs' | sed 's/^/dmesg /' || true
} > "$out/machine.txt"

# ---- 1. prepare (untraced) ----
echo "kbuild_mix: make -j$jobs prepare (untraced)" >&2
make -s -C "$src" -j"$jobs" prepare > "$raw/prepare.log" 2>&1 || fail "make prepare failed, see $raw/prepare.log"

# ---- 2. clean the target directories' outputs ----
for t in "${targets[@]}"; do
  d="$src/${t%/}"
  [ -d "$d" ] || fail "target dir $d does not exist"
  find "$d" \( -name '*.o' -o -name '*.a' -o -name '.*.cmd' -o -name 'modules.order' \
      -o -name '*.mod' -o -name '*.mod.c' -o -name '*.ko' -o -name '*.lds' \) -type f -delete
done
sync

# ---- 3. recorders ----
evs="tlb:tlb_flush,sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit"
sys="syscalls:sys_enter_mmap,syscalls:sys_enter_munmap,syscalls:sys_enter_mprotect,syscalls:sys_enter_brk,syscalls:sys_enter_madvise,syscalls:sys_enter_execve,syscalls:sys_enter_clone,syscalls:sys_enter_clone3,syscalls:sys_enter_vfork,syscalls:sys_enter_fork,syscalls:sys_enter_wait4"
rm -f "$raw/perf.data" "$raw/perf.data.old"
perf stat -a -x, -o "$raw/perfstat.csv" \
  -e page-faults,minor-faults,major-faults,context-switches,cpu-migrations,task-clock \
  -e "$evs,exceptions:page_fault_user,exceptions:page_fault_kernel,$sys" &
pids_to_stop+=("$!")
perf record -q -a -B -m 4096 -o "$raw/perf.data" \
  -e "$evs,exceptions:page_fault_user" \
  -e exceptions:page_fault_kernel --filter 'address < 0x800000000000' \
  -e "$sys" > "$raw/perfrecord.log" 2>&1 &
pids_to_stop+=("$!")
"$py" - "$raw/hwm.csv" <<'EOF' &
import os, sys, time, signal
out = sys.argv[1]; best = {}
run = [True]
def stop(*_): run[0] = False
signal.signal(signal.SIGINT, stop); signal.signal(signal.SIGTERM, stop)
while run[0]:
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        try:
            with open('/proc/%s/status' % p) as f: s = f.read()
        except OSError: continue
        if not s.startswith('Name:\tcc1\n'): continue
        for line in s.splitlines():
            if line.startswith('VmHWM:'):
                best[int(p)] = max(best.get(int(p), 0), int(line.split()[1]))
    time.sleep(0.1)
with open(out, 'w') as f:
    f.write('pid,vmhwm_kb\n')
    for p, v in sorted(best.items()): f.write('%d,%d\n' % (p, v))
EOF
sampler=$!; pids_to_stop+=("$sampler")
echo "$sampler" > "$raw/sampler.pid"
sleep 3   # let perf finish synthesizing existing tasks

# ---- 4. the build ----
echo "kbuild_mix: measuring make -j$jobs ${targets[*]} for at most ${window}s" >&2
snap before
date +%s.%N > "$raw/t_start"
rc=0
/usr/bin/time -v -o "$raw/time.txt" timeout -s INT "$window" \
  make -C "$src" -j"$jobs" "${targets[@]}" > "$raw/make.log" 2>&1 &
buildpid=$!; pids_to_stop+=("$buildpid"); echo "$buildpid" > "$raw/build.pid"
wait "$buildpid" || rc=$?
date +%s.%N > "$raw/t_end"
snap after
echo "make_rc $rc (124 = stopped by the window)" >> "$out/machine.txt"
sleep 1
for p in "${pids_to_stop[@]}"; do kill -INT "$p" 2>/dev/null || true; done
for p in "${pids_to_stop[@]}"; do wait "$p" 2>/dev/null || true; done
pids_to_stop=()

# ---- 5. decode and summarise ----
echo "kbuild_mix: decoding perf.data" >&2
perf report -i "$raw/perf.data" --stats 2>/dev/null | grep -i -E 'lost|SAMPLE' > "$raw/perfstats.txt" || true
perf script -i "$raw/perf.data" -F comm,tid,cpu,time,event,trace > "$raw/script.txt" 2> "$raw/script.err"
cp "$raw/time.txt" "$raw/perfstat.csv" "$raw/hwm.csv" "$raw/perfstats.txt" "$out/"
tail -20 "$raw/make.log" > "$out/make.log.tail"
for s in before after; do
  grep -E '^(cpu |cpu[0-9])' "$raw/stat.$s" > "$out/stat.$s"
  grep -E '^\s*(TLB|CAL|RES|LOC):' "$raw/interrupts.$s" > "$out/interrupts.$s"
  grep -E '^(pgfault|pgmajfault|thp_|nr_tlb|pgalloc_normal|pgfree|pgreuse)' "$raw/vmstat.$s" > "$out/vmstat.$s" || true
done
# The analysis program is embedded here (kept in this one file).
"$py" - "$raw" "$out" <<'EOF'
import sys, re, collections, bisect
raw, out = sys.argv[1], sys.argv[2]
excl = {int(open(raw + '/sampler.pid').read())}
root = int(open(raw + '/build.pid').read())
B = {root}   # the build's process tree (tids), grown from fork events in time order
t0 = float(open(raw + '/t_start').read()); t1 = float(open(raw + '/t_end').read())
HZ = 100.0  # USER_HZ of /proc/stat

def cls(c):
    if c in ('cc1', 'cc1plus'): return 'cc1'
    if c == 'as': return 'as'
    if c in ('ld', 'ld.bfd', 'ld.gold', 'ld.lld'): return 'ld'
    if c in ('sh', 'dash', 'bash'): return 'sh'
    if c == 'make': return 'make'
    if c in ('gcc', 'cc', 'gcc-12', 'x86_64-linux-gnu-gcc-12', 'x86_64-linux-gn'): return 'gcc'
    return 'other'
CLASSES = ['cc1', 'as', 'ld', 'sh', 'make', 'gcc', 'other']

def pct(v, p):
    if not v: return float('nan')
    v = sorted(v); k = (len(v) - 1) * p; f = int(k); c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)

def sizebin(p):
    if p == -1 or p >= (1 << 63): return 'full(-1)'
    if p == 0: return '0'
    if p == 1: return '1'
    if p == 2: return '2'
    if p <= 4: return '3-4'
    if p <= 8: return '5-8'
    if p <= 16: return '9-16'
    if p <= 32: return '17-32'
    if p == 33: return '33'
    if p == 0: return '0'
    return 'other(>33)'
SIZEBINS = ['1', '2', '3-4', '5-8', '9-16', '17-32', '33', 'full(-1)', 'other(>33)', '0']

def munbin(pages):
    for lim, name in ((1, '1'), (2, '2'), (4, '3-4'), (8, '5-8'), (16, '9-16'), (32, '17-32'),
                      (64, '33-64'), (256, '65-256'), (512, '257-512'), (2048, '513-2048')):
        if pages <= lim: return name
    return '>2048'
MUNBINS = ['1', '2', '3-4', '5-8', '9-16', '17-32', '33-64', '65-256', '257-512', '513-2048', '>2048']

rx = re.compile(r'^\s*(.*?)\s+(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+([\w:]+):\s?(.*)$')
kv = re.compile(r'(\w+)=(\S+)')
first_t = last_t = None
ncpu = 0
flush = collections.Counter()            # (reason, bin), build tree only
flush_all = collections.Counter()        # (reason, bin), system-wide
faults_all = collections.Counter()       # in build tree? -> user faults
other_comm = collections.Counter()       # events outside the build tree, by comm
flush_cpu = collections.Counter()        # (cpu, reason)
flush_comm = collections.Counter()       # (class, reason)
flush_exact = collections.Counter()      # (reason, pages)
faults = collections.Counter()           # (tid, comm) -> user-mode faults
fkind = collections.Counter()            # (class, kind)
kfaults = collections.Counter()          # (tid, comm) -> kernel-mode faults on user addresses
sysc = collections.Counter()             # (tid, comm, name)
munmap_bins = collections.Counter(); munmap_bins_cls = collections.Counter()
forks = []; execs = []; exits = []
fork_t = {}; exec_t = {}; exec_comm = {}; life = []   # life: (comm, fork_t, exec_t, exit_t, tid, group_dead)
nlines = 0; bad = 0
for line in open(raw + '/script.txt', errors='replace'):
    m = rx.match(line)
    if not m: bad += 1; continue
    nlines += 1
    comm, tid, cpu, t, ev, rest = m.group(1), int(m.group(2)), int(m.group(3)), float(m.group(4)), m.group(5), m.group(6)
    if tid in excl: continue
    ncpu = max(ncpu, cpu + 1)
    if first_t is None: first_t = t
    last_t = t
    inb = tid in B
    if ev == 'tlb:tlb_flush':
        mm = re.match(r'pages:(-?\d+) reason:.*\((\d+)\)', rest)
        pages, reason = int(mm.group(1)), int(mm.group(2))
        if pages >= (1 << 63): pages -= (1 << 64)
        flush_all[(reason, sizebin(pages))] += 1
    elif ev == 'exceptions:page_fault_user':
        faults_all[inb] += 1
    elif ev == 'sched:sched_process_fork':
        d = dict(kv.findall(rest))
        if inb: B.add(int(d['child_pid']))
        elif int(d['child_pid']) != root: B.discard(int(d['child_pid']))   # pid reused outside the build
    if not inb:
        other_comm[comm] += 1
        continue
    if ev == 'exceptions:page_fault_user':
        faults[(tid, comm)] += 1
        ec = int(rest.rsplit('error_code=', 1)[1], 16)
        kind = 'ifetch' if ec & 0x10 else ('wp-write(P|W: COW etc.)' if (ec & 3) == 3 else
               ('np-write' if ec & 2 else ('np-read' if not ec & 1 else 'prot-read')))
        fkind[(cls(comm), kind)] += 1
    elif ev == 'exceptions:page_fault_kernel':
        kfaults[(tid, comm)] += 1
    elif ev == 'tlb:tlb_flush':
        mm = re.match(r'pages:(-?\d+) reason:.*\((\d+)\)', rest)
        pages, reason = int(mm.group(1)), int(mm.group(2))
        if pages >= (1 << 63): pages -= (1 << 64)
        flush[(reason, sizebin(pages))] += 1; flush_exact[(reason, pages)] += 1
        flush_cpu[(cpu, reason)] += 1; flush_comm[(cls(comm), reason)] += 1
    elif ev.startswith('syscalls:sys_enter_'):
        name = ev[len('syscalls:sys_enter_'):]
        sysc[(tid, comm, name)] += 1
        if name == 'munmap':
            ln = int(re.search(r'len: (0x[0-9a-f]+)', rest).group(1), 16)
            b = munbin((ln + 4095) // 4096)
            munmap_bins[b] += 1; munmap_bins_cls[(cls(comm), b)] += 1
    elif ev == 'sched:sched_process_fork':
        d = dict(kv.findall(rest)); c = int(d['child_pid'])
        forks.append((t, comm, c)); fork_t[c] = t; exec_t.pop(c, None)
    elif ev == 'sched:sched_process_exec':
        d = dict(kv.findall(rest)); p = int(d['pid'])
        execs.append((t, d['filename'], p)); exec_t[p] = t; exec_comm[p] = d['filename'].rsplit('/', 1)[-1][:15]
    elif ev == 'sched:sched_process_exit':
        d = dict(kv.findall(rest)); p = int(d['pid'])
        exits.append((t, d['comm'], p))
        life.append((d['comm'], fork_t.pop(p, None), exec_t.pop(p, None), t, p, d.get('group_dead', 'true')))

# ---- wall time, CPU time ----
def cpustat(fn):
    for l in open(fn):
        if l.startswith('cpu '):
            v = [int(x) for x in l.split()[1:]]
            return dict(user=v[0], nice=v[1], system=v[2], idle=v[3], iowait=v[4], irq=v[5], softirq=v[6], steal=v[7])
a, b = cpustat(raw + '/stat.before'), cpustat(raw + '/stat.after')
d = {k: (b[k] - a[k]) / HZ for k in a}
busy = d['user'] + d['nice'] + d['system'] + d['irq'] + d['softirq']
wall = t1 - t0
tv = {}
for l in open(raw + '/time.txt'):
    if ':' in l:
        k, _, v = l.partition(': '); tv[k.strip()] = v.strip()
def irq(fn, row):
    for l in open(fn):
        if l.strip().startswith(row + ':'):
            return sum(int(x) for x in l.split()[1:] if x.isdigit())
    return 0
vm = lambda fn: {l.split()[0]: int(l.split()[1]) for l in open(fn)}
va, vb = vm(raw + '/vmstat.before'), vm(raw + '/vmstat.after')
stat = {}
for l in open(raw + '/perfstat.csv'):
    p = l.strip().split(',')
    if len(p) > 2 and p[0].replace('.', '').isdigit(): stat[p[2]] = float(p[0])

W = open(out + '/summary.txt', 'w')
def w(*x): print(*x, file=W)
w('# kbuild mix summary (raw dir %s)' % raw)
w('wall_s %.2f  (from the script; /usr/bin/time elapsed %s)' % (wall, tv.get('Elapsed (wall clock) time (h:mm:ss or m:ss)')))
w('perf_trace_span_s %.2f  decoded_lines %d  unparsed_lines %d  cpus %d' % (last_t - first_t, nlines, bad, ncpu))
w('proc_stat_s user %.2f nice %.2f system %.2f irq %.2f softirq %.2f idle %.2f iowait %.2f steal %.2f busy %.2f'
  % (d['user'], d['nice'], d['system'], d['irq'], d['softirq'], d['idle'], d['iowait'], d['steal'], busy))
w('time_v user_s %s system_s %s pct_cpu %s maxrss_kb %s vol_cs %s invol_cs %s minor_faults %s major_faults %s'
  % (tv.get('User time (seconds)'), tv.get('System time (seconds)'), tv.get('Percent of CPU this job got'),
     tv.get('Maximum resident set size (kbytes)'), tv.get('Voluntary context switches'),
     tv.get('Involuntary context switches'), tv.get('Minor (reclaiming a frame) page faults'),
     tv.get('Major (requiring I/O) page faults')))
for row in ('TLB', 'CAL', 'RES', 'LOC'):
    w('interrupts_%s_delta %d' % (row, irq(raw + '/interrupts.after', row) - irq(raw + '/interrupts.before', row)))
for k in ('pgfault', 'pgmajfault', 'nr_tlb_remote_flush', 'nr_tlb_remote_flush_received', 'nr_tlb_local_flush_all', 'nr_tlb_local_flush_one', 'thp_fault_alloc', 'pgreuse'):
    if k in va: w('vmstat_%s_delta %d' % (k, vb[k] - va[k]))
w('\n## perf stat -a (exact counts over the recorder lifetime, a few s longer than the build)')
for k, v in stat.items(): w('%-40s %14.0f' % (k, v))

w('\n## outside the build tree (other tasks on the machine, incl. perf): user faults %d; events by comm (top 12): %s'
  % (faults_all[False], ', '.join('%s %d' % kv_ for kv_ in other_comm.most_common(12))))
w('build tree: root pid %d, %d tids seen; build-tree share of user faults %.3f' % (root, len(B), faults_all[True] / max(1, sum(faults_all.values()))))
bcpu = float(tv.get('User time (seconds)', 0)) + float(tv.get('System time (seconds)', 0))
w('build CPU (time -v user+sys) %.2f s = %.2f CPUs over the wall time' % (bcpu, bcpu / wall))
w('\n## process events of the build tree (everything below is build tree only unless marked system-wide)')
nf, ne, nx = len(forks), len(execs), len(exits)
nxp = sum(1 for x in life if x[5] == 'true')
w('forks %d (%.2f/s)  execs %d (%.2f/s)  exits %d (%.2f/s), of which group_dead (process exits) %d'
  % (nf, nf / wall, ne, ne / wall, nx, nx / wall, nxp))
ex_by = collections.Counter(cls(x[1]) for x in exits)
w('exits by class: ' + ', '.join('%s %d' % (c, ex_by[c]) for c in CLASSES))
w('exec filenames (top 15): ' + ', '.join('%s %d' % kv_ for kv_ in collections.Counter(e[1] for e in execs).most_common(15)))
w('exit comms, other (top 20): ' + ', '.join('%s %d' % kv_ for kv_ in collections.Counter(x[1] for x in exits if cls(x[1]) == 'other').most_common(20)))

w('\n## lifetimes by comm at exit (ms). fork->exit: forked and exited in the window; exec->exit: last exec and exit in the window')
w('%-6s %7s %9s %9s %9s | %7s %9s %9s %9s' % ('class', 'n_fork', 'med', 'p90', 'mean', 'n_exec', 'med', 'p90', 'mean'))
for c in CLASSES:
    fe = [(x[3] - x[1]) * 1e3 for x in life if cls(x[0]) == c and x[1] is not None and x[5] == 'true']
    ee = [(x[3] - x[2]) * 1e3 for x in life if cls(x[0]) == c and x[2] is not None and x[5] == 'true']
    w('%-6s %7d %9.1f %9.1f %9.1f | %7d %9.1f %9.1f %9.1f' % (c, len(fe), pct(fe, .5), pct(fe, .9), sum(fe) / max(len(fe), 1),
                                                   len(ee), pct(ee, .5), pct(ee, .9), sum(ee) / max(len(ee), 1)))

# ---- per-process figures (complete processes: forked and exited inside the window) ----
complete = {x[4]: x for x in life if x[1] is not None and x[5] == 'true'}
byproc = collections.defaultdict(collections.Counter)  # pid -> comm -> faults
for (tid, comm), n in faults.items(): byproc[tid][comm] += n
kbyproc = collections.defaultdict(int)
for (tid, comm), n in kfaults.items(): kbyproc[tid] += n
w('\n## user-mode page faults (exceptions:page_fault_user), build tree %d; kernel-mode faults on user addresses %d'
  % (sum(faults.values()), sum(kfaults.values())))
fc = collections.Counter()
for (tid, comm), n in faults.items(): fc[cls(comm)] += n
w('by comm class at fault time: ' + ', '.join('%s %d' % (c, fc[c]) for c in CLASSES))
cc = collections.Counter()
for (tid, comm), n in faults.items(): cc[comm] += n
W.write('by comm (top 15): ' + ', '.join('%s %d' % kv_ for kv_ in cc.most_common(15)) + '\n')
w('fault kinds by class (error_code): ')
kinds = sorted({k for (_, k) in fkind})
for c in CLASSES:
    tot = sum(fkind[(c, k)] for k in kinds) or 1
    w('  %-6s ' % c + ', '.join('%s %d (%.1f%%)' % (k, fkind[(c, k)], 100.0 * fkind[(c, k)] / tot) for k in kinds))
w('\n## per complete process (forked and exited within the window), by comm at exit')
w('%-6s %6s | %s | %s | %s | %s' % ('class', 'n', 'user faults: med p90 mean (as this comm only: med mean)',
  'kernel-mode faults on user addr: mean', 'munmap/proc: mean med p90', 'mmap, mprotect, brk /proc: mean'))
sysby = collections.defaultdict(collections.Counter)
for (tid, comm, name), n in sysc.items(): sysby[tid][name] += n
perproc_rows = []
for c in CLASSES:
    ps = [p for p, x in complete.items() if cls(x[0]) == c]
    if not ps: continue
    f_all = [sum(byproc[p].values()) for p in ps]
    f_own = [sum(n for cm, n in byproc[p].items() if cls(cm) == c) for p in ps]
    kf = [kbyproc[p] for p in ps]
    mu = [sysby[p]['munmap'] for p in ps]
    mm_ = [sysby[p]['mmap'] for p in ps]; mp = [sysby[p]['mprotect'] for p in ps]; br = [sysby[p]['brk'] for p in ps]
    w('%-6s %6d | %8.0f %8.0f %8.0f (%8.0f %8.0f) | %8.1f | %6.1f %5.0f %5.0f | %6.1f %6.1f %6.1f'
      % (c, len(ps), pct(f_all, .5), pct(f_all, .9), sum(f_all) / len(ps), pct(f_own, .5), sum(f_own) / len(ps),
         sum(kf) / len(ps), sum(mu) / len(ps), pct(mu, .5), pct(mu, .9), sum(mm_) / len(ps), sum(mp) / len(ps), sum(br) / len(ps)))
    for p in ps:
        x = complete[p]
        perproc_rows.append('%d,%s,%s,%.6f,%s,%d,%d,%d,%d,%d,%d,%d' % (p, x[0], c, (x[3] - x[1]), '%.6f' % (x[3] - x[2]) if x[2] else '',
            sum(byproc[p].values()), sum(n for cm, n in byproc[p].items() if cls(cm) == c), kbyproc[p],
            sysby[p]['munmap'], sysby[p]['mmap'], sysby[p]['mprotect'], sysby[p]['brk']))
with open(out + '/per_process.csv', 'w') as f:
    f.write('pid,comm_at_exit,class,fork_to_exit_s,exec_to_exit_s,user_faults,user_faults_as_this_comm,kernel_faults_user_addr,munmap,mmap,mprotect,brk\n')
    f.write('\n'.join(perproc_rows) + '\n')

hwm = {}
for l in list(open(raw + '/hwm.csv'))[1:]:
    p, v = l.split(','); hwm[int(p)] = int(v)
h = [v / 1024.0 for v in hwm.values()]
w('\n## cc1 VmHWM (sampled every 0.1 s, so a lower bound), MiB: n %d median %.1f p90 %.1f max %.1f' % (len(h), pct(h, .5), pct(h, .9), max(h) if h else float('nan')))

w('\n## syscalls (recorded), totals and per second')
tot = collections.Counter()
for (tid, comm, name), n in sysc.items(): tot[name] += n
for k in ('mmap', 'munmap', 'mprotect', 'brk', 'madvise', 'execve', 'clone', 'clone3', 'vfork', 'fork', 'wait4'):
    w('%-9s %9d  %8.1f/s' % (k, tot[k], tot[k] / wall))
w('munmap length (pages, rounded up) histogram: ' + ', '.join('%s %d' % (b, munmap_bins[b]) for b in MUNBINS))
for c in CLASSES:
    s = sum(munmap_bins_cls[(c, b)] for b in MUNBINS)
    if s: w('  %-6s ' % c + ', '.join('%s %d' % (b, munmap_bins_cls[(c, b)]) for b in MUNBINS))

w('\n## tlb:tlb_flush by reason (0 task switch, 1 remote shootdown (received), 2 local shootdown, 3 local MM shootdown, 4 remote IPI send, 5 remote wrong CPU)')
reasons = sorted({r for (r, _) in flush})
allf = sum(flush.values())
uf = sum(faults.values())
w('build tree: total %d  (%.1f/s, %.1f/s per CPU; %.4f flushes per user fault; %.1f per build CPU-s)' % (allf, allf / wall, allf / wall / max(ncpu, 1), allf / max(uf, 1), allf / bcpu))
w('faults per build CPU-s (user-mode faults / (user+sys of the build)): %.0f; per CPU-s of user time: %.0f' % (uf / bcpu, uf / float(tv.get('User time (seconds)', 1))))
w('%-7s %9s %8s ' % ('reason', 'count', 'per_s') + ' '.join('%9s' % b for b in SIZEBINS))
for r in reasons:
    n = sum(flush[(r, b)] for b in SIZEBINS)
    w('%-7d %9d %8.1f ' % (r, n, n / wall) + ' '.join('%9d' % flush[(r, b)] for b in SIZEBINS))
w('system-wide (all tasks): total %d (%.1f/s, %.1f/s per CPU); %.4f flushes per user fault (system-wide); per busy CPU-s (/proc/stat) %.1f'
  % (sum(flush_all.values()), sum(flush_all.values()) / wall, sum(flush_all.values()) / wall / max(ncpu, 1),
     sum(flush_all.values()) / max(1, sum(faults_all.values())), sum(flush_all.values()) / busy))
for r in sorted({r for (r, _) in flush_all}):
    n = sum(flush_all[(r, b)] for b in SIZEBINS)
    w('%-7d %9d %8.1f ' % (r, n, n / wall) + ' '.join('%9d' % flush_all[(r, b)] for b in SIZEBINS))
w('build tree, per CPU: ' + '; '.join('cpu%d ' % c + ','.join('r%d=%d' % (r, flush_cpu[(c, r)]) for r in reasons) for c in range(ncpu)))
w('by comm class of the current task: ' + '; '.join('%s ' % c + ','.join('r%d=%d' % (r, flush_comm[(c, r)]) for r in reasons) for c in CLASSES))
with open(out + '/tlb_flush_exact.csv', 'w') as f:
    f.write('reason,pages,count\n')
    for (r, p), n in sorted(flush_exact.items()): f.write('%d,%d,%d\n' % (r, p, n))
W.close()
print(open(out + '/summary.txt').read())
EOF
