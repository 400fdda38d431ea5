#!/usr/bin/env python3
"""Context switches of a real kernel build, from a `tlblab trace record --events tlb,sched` trace.

    kbuild_switches.py analyse RUNDIR [SKIP_S [TAIL_S]]   # figures on stdout (steady state)
    kbuild_switches.py excerpt RUNDIR FROM_S LEN_S OUT.flushtrace

RUNDIR is what kbuild_switches.sh wrote: build.flushtrace (system-wide), forks.txt (the
sched_process_fork events of a tracefs instance of its own: parent and child pid), time.txt.

Attribution: the build's process tree is grown from the pid that exec'd `/usr/bin/time` (a
`Task` record with comm `time`) through forks.txt (threads included). Everything else (other
sessions' cargo/rustc, kernel threads, idle) is "foreign". A switch counts as the build's when
its prev or next task is in the tree. The build's CPU time is the sum of the tree's on-CPU
intervals between switches (interrupts included, as the kernel's own accounting would).

mm identity: a user task's mm is (tgid, number of execs of that tgid so far); a child that has
not exec'd yet shares its parent's mm (kbuild's children are vfork/posix_spawn children: see
kbuild-mix-2026-11-22.md); kernel threads (comm patterns below, or pid 2's children) have none
and idle (pid 0) has none.
"""

import collections
import json
import re
import struct
import sys

MAGIC, END_MAGIC = b"TLBLABFT", b"TLBLABFE"
FLUSH, SWITCH, IPI, CALLF, TASK, OTHER, END = 1, 2, 3, 4, 5, 6, 0xFF


def uleb(b, i):
    v = s = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << s
        if x < 0x80:
            return v, i
        s += 7


def zz(b, i):
    v, i = uleb(b, i)
    return (v >> 1) ^ -(v & 1), i


def read_trace(path):
    """Yields (kind, ts, cpu, fields) for every record; returns header and trailer via lists."""
    b = open(path, "rb").read()
    assert b[:8] == MAGIC, "not a flush trace"
    (hl,) = struct.unpack_from("<I", b, 12)
    header = json.loads(b[16:16 + hl])
    i, ts, recs = 16 + hl, 0, []
    while True:
        tag = b[i]
        i += 1
        if tag == END:
            (tl,) = struct.unpack_from("<I", b, i)
            trailer = json.loads(b[i + 4:i + 4 + tl])
            break
        d, i = zz(b, i)
        ts = (ts + d) & 0xFFFFFFFFFFFFFFFF
        cpu, i = uleb(b, i)
        if tag == FLUSH:
            pid, i = zz(b, i)
            reason, i = zz(b, i)
            pages, i = zz(b, i)
            recs.append((FLUSH, ts, cpu, (pid, reason, pages)))
        elif tag == SWITCH:
            prev, i = zz(b, i)
            state, i = zz(b, i)
            nxt, i = zz(b, i)
            recs.append((SWITCH, ts, cpu, (prev, state, nxt)))
        elif tag == IPI:
            pid, i = zz(b, i)
            cb, i = uleb(b, i)
            n, i = uleb(b, i)
            t = []
            for _ in range(n):
                x, i = uleb(b, i)
                t.append(x)
            recs.append((IPI, ts, cpu, (pid, cb, t)))
        elif tag == CALLF:
            pid, i = zz(b, i)
            vec, i = zz(b, i)
            fl = b[i]
            i += 1
            recs.append((CALLF, ts, cpu, (pid, vec, fl)))
        elif tag == TASK:
            pid, i = zz(b, i)
            tgid, i = zz(b, i)
            n, i = uleb(b, i)
            comm = b[i:i + n].decode()
            i += n
            recs.append((TASK, ts, cpu, (pid, tgid, comm)))
        elif tag == OTHER:
            pid, i = zz(b, i)
            ev, i = uleb(b, i)
            recs.append((OTHER, ts, cpu, (pid, ev)))
        else:
            raise ValueError(f"tag {tag} at {i - 1}")
    return header, recs, trailer


def write_trace(path, header, recs, trailer):
    def puleb(out, v):
        while True:
            x = v & 0x7F
            v >>= 7
            if v:
                out.append(x | 0x80)
            else:
                out.append(x)
                return

    def pz(out, v):
        puleb(out, (v << 1) ^ (v >> 63) if v >= 0 else ((v << 1) ^ -1) & 0xFFFFFFFFFFFFFFFF)

    out = bytearray(MAGIC + struct.pack("<I", 1))
    hj = json.dumps(header).encode()
    out += struct.pack("<I", len(hj)) + hj
    last = 0
    for kind, ts, cpu, f in recs:
        out.append(kind)
        d = (ts - last) & 0xFFFFFFFFFFFFFFFF
        if d >= 1 << 63:
            d -= 1 << 64
        pz(out, d)
        last = ts
        puleb(out, cpu)
        if kind == FLUSH:
            pz(out, f[0]); pz(out, f[1]); pz(out, f[2])
        elif kind == SWITCH:
            pz(out, f[0]); pz(out, f[1]); pz(out, f[2])
        elif kind == TASK:
            pz(out, f[0]); pz(out, f[1]); c = f[2].encode(); puleb(out, len(c)); out += c
        elif kind == IPI:
            pz(out, f[0]); puleb(out, f[1]); puleb(out, len(f[2]))
            for t in f[2]:
                puleb(out, t)
        elif kind == CALLF:
            pz(out, f[0]); pz(out, f[1]); out.append(f[2])
        else:
            pz(out, f[0]); puleb(out, f[1])
    trailer = dict(trailer, records=len(recs))
    tj = json.dumps(trailer).encode()
    out.append(END)
    out += struct.pack("<I", len(tj)) + tj + END_MAGIC
    open(path, "wb").write(out)


FORK_RE = re.compile(r"sched_process_fork: comm=(.*) pid=(\d+) child_comm=(.*) child_pid=(\d+)")
KTHREAD_RE = re.compile(r"^(kworker|ksoftirqd|rcu_|migration|kdamond|jbd2|kswapd|kcompactd|"
                        r"khugepaged|cpuhp|watchdog|idle_inject|irq/|kthreadd|oom_reaper|"
                        r"writeback|kblockd|scsi_|ext4-|kauditd|khungtaskd|ksmd|tlblab-)")
BUILD_CLASSES = ["make", "sh", "gcc", "cc1", "as", "fixdep", "rm", "objtool", "ld"]


def cls_of(comm):
    if comm in BUILD_CLASSES:
        return comm
    return "other-build"


class Run:
    def __init__(self, rundir):
        self.header, self.recs, self.trailer = read_trace(f"{rundir}/build.flushtrace")
        self.parent = {}
        for line in open(f"{rundir}/forks.txt", errors="replace"):
            m = FORK_RE.search(line)
            if m:
                self.parent[int(m.group(4))] = int(m.group(2))
        # the root: the pid that exec'd `time`
        roots = [f[0] for k, _, _, f in self.recs if k == TASK and f[2] == "time"]
        assert roots, "no `time` task in the trace"
        self.root = roots[0]
        children = collections.defaultdict(list)
        for c, p in self.parent.items():
            children[p].append(c)
        tree, todo = set(), [self.root]
        while todo:
            p = todo.pop()
            if p in tree:
                continue
            tree.add(p)
            todo.extend(children[p])
        self.tree = tree


def analyse(rundir, skip_s=10.0, tail_s=1.0):
    r = Run(rundir)
    tree, recs = r.tree, r.recs
    comm = {}
    # mm of a pid: a key per address space. A thread shares its tgid's; a task record for a
    # pid already seen is an exec (a new mm); a new child shares its parent's mm until its
    # exec (vfork/posix_spawn); kernel threads and idle have none.
    mm = {}

    def mm_of(pid):
        if pid <= 0:
            return None
        if KTHREAD_RE.match(comm.get(pid, "")) or r.parent.get(pid) == 2:
            return None
        return mm.get(pid, ("p", pid))

    # Steady state only: the first `skip_s` (make's start-up: syncconfig, descending into the
    # directories, mkdir) and the last `tail_s` (the SIGINT that ends the window) are left out.
    trace_first = next(ts for k, ts, _, _ in recs if k != TASK)
    first_ts = trace_first + int(skip_s * 1e9)
    last_ts = recs[-1][1] - int(tail_s * 1e9)
    on_cpu = {}  # cpu -> (pid, since)
    build_cpu_ns = collections.Counter()  # by class
    runs = collections.defaultdict(list)  # class -> run lengths ns (switch in -> switch out)
    run_end = collections.defaultdict(collections.Counter)  # class -> how runs end
    blocked_since = {}
    waits = collections.defaultdict(list)  # class -> blocked durations ns
    sw = collections.Counter()
    pairs = collections.Counter()
    flushes = collections.Counter()
    BUCKET = 10e9
    bucket_cpu = collections.Counter()
    bucket_sw = collections.defaultdict(collections.Counter)
    model = collections.Counter()  # the figures a model of the build alone can be held to
    for kind, ts, cpu, f in recs:
        if kind == TASK:
            pid, g, c = f
            g = g if g > 0 else pid
            if g != pid:
                mm[pid] = mm.get(g, ("p", g))
            elif pid in comm:
                mm[pid] = ("x", pid, ts)
            else:
                par = r.parent.get(pid)
                mm[pid] = mm[par] if par in mm else ("p", pid)
            comm[pid] = c
            continue
        if kind != SWITCH and not first_ts <= ts < last_ts:
            continue
        if kind == FLUSH:
            if f[0] in tree:
                flushes[(f[1], "full" if f[2] == -1 else ("zero" if f[2] == 0 else "pages"))] += 1
            continue
        if kind != SWITCH:
            continue
        prev, state, nxt = f
        if not first_ts <= ts < last_ts:
            on_cpu[cpu] = (nxt, max(ts, first_ts))
            if ts < first_ts and prev in tree and state & 0xFF:
                blocked_since.pop(prev, None)
            continue
        if cpu in on_cpu:
            p, since = on_cpu[cpu]
            if p == prev and p in tree:
                build_cpu_ns[cls_of(comm.get(p, "?"))] += ts - since
                bucket_cpu[int((since - first_ts) // BUCKET)] += ts - since
        on_cpu[cpu] = (nxt, ts)
        pin, nin = prev in tree, nxt in tree
        if nin:
            if nxt in blocked_since:
                waits[cls_of(comm.get(nxt, "?"))].append(ts - blocked_since.pop(nxt))
        if not (pin or nin):
            continue
        rep = state & 0xFF
        dead = rep & ((1 << 4) | (1 << 5))  # X or Z: the task's last switch
        vol = rep != 0
        kindname = "exit" if dead else ("voluntary" if vol else "involuntary")

        def side(pid, intree):
            if pid == 0:
                return "idle"
            if intree:
                return cls_of(comm.get(pid, "?"))
            c = comm.get(pid, "?")
            if KTHREAD_RE.match(c) or r.parent.get(pid) == 2:
                return "kthread"
            return "foreign"

        pc, nc = side(prev, pin), side(nxt, nin)
        pm, nm = mm_of(prev), mm_of(nxt)
        if pm is None or nm is None:
            mmk = "to/from no-mm"
        elif pm == nm:
            mmk = "same-mm"
        else:
            mmk = "cross-mm"
        sw[("all", "all")] += 1
        sw[("kind", kindname)] += 1
        sw[("mm", mmk)] += 1
        sw[("out", pc if pin else "(foreign side)")] += 1 if pin else 0
        sw[("in", nc if nin else "(foreign side)")] += 1 if nin else 0
        sw[("side", ("build" if pin else pc) + " -> " + ("build" if nin else nc))] += 1
        if pin:
            sw[("out-kind", kindname)] += 1
            sw[("out-kind-by", f"{kindname} -> {nc if not nin else 'build'}")] += 1
            if not vol and not dead:
                sw[("preempted-by", "build" if nin else nc)] += 1
            if vol and not dead:
                blocked_since[prev] = ts
        pairs[(pc, nc, kindname, mmk)] += 1
        b = int((ts - first_ts) // BUCKET)
        if pin:
            bucket_sw[b][kindname] += 1
            if not vol or dead:
                pass
            # what a build alone on the machine would show: a switch-out of a build task
            # (voluntary, exit, or preempted by another build task) goes to another build task
            # (same or cross mm) or, when none is runnable, to idle; a foreign or kernel
            # thread taking the CPU stands for idle (the CPU would otherwise have idled).
            if vol or nin:
                to = ("build " + mmk) if nin else "not build (idle on a quiet machine)"
                model[(kindname, to)] += 1
        if nin and not pin:
            model[("in", "from not build (wake from idle on a quiet machine)")] += 1
    # runs of a task: from switch-in to switch-out, by how they end
    cur = {}
    for kind, ts, cpu, f in recs:
        if kind != SWITCH:
            continue
        prev, state, nxt = f
        if not first_ts <= ts < last_ts:
            cur.pop(cpu, None)
            continue
        if cpu in cur and cur[cpu][0] == prev and prev in tree:
            c = cls_of(comm.get(prev, "?"))
            runs[c].append(ts - cur[cpu][1])
            rep = state & 0xFF
            run_end[c]["exit" if rep & 0x30 else ("voluntary" if rep else "involuntary")] += 1
        cur[cpu] = (nxt, ts)
    wall = (last_ts - first_ts) / 1e9
    cpu_s = sum(build_cpu_ns.values()) / 1e9
    out = []
    P = out.append
    P(f"steady state: {skip_s} s to {(last_ts - trace_first) / 1e9:.2f} s of the trace")
    P(f"trace: {len(recs)} records, {wall:.2f} s analysed, CPUs {r.header.get('cpus')}, kernel {r.header.get('kernel_release')}")
    P(f"losses: {r.trailer.get('losses')}")
    P(f"build tree: {len(tree)} pids (root {r.root})")
    P(f"build CPU time from switches: {cpu_s:.2f} CPU-s = {cpu_s / wall:.3f} CPUs")
    for c, ns in build_cpu_ns.most_common():
        P(f"  {c:12s} {ns / 1e9:8.2f} CPU-s  {100 * ns / 1e9 / cpu_s:5.1f}%")
    try:
        t = open(f"{rundir}/time.txt").read()
        u = float(re.search(r"User time \(seconds\): ([\d.]+)", t).group(1))
        s = float(re.search(r"System time \(seconds\): ([\d.]+)", t).group(1))
        P(f"time -v: user {u:.2f} + sys {s:.2f} = {u + s:.2f} CPU-s")
    except (OSError, AttributeError):
        pass
    n = sw[("all", "all")]
    P(f"\nswitches involving the build: {n} = {n / cpu_s:.1f} per build CPU-s ({n / wall:.1f}/s wall)")
    for k in ["kind", "mm", "side", "out-kind", "out-kind-by", "preempted-by", "out", "in"]:
        P(f"-- {k}")
        for (kk, v), c in sorted(sw.items(), key=lambda x: -x[1]):
            if kk == k and c:
                P(f"  {v:40s} {c:8d}  {c / cpu_s:8.2f}/build-CPU-s  {100 * c / n:5.1f}%")
    P("-- pairs (prev class, next class, kind, mm): top 40")
    for (pc, nc, kn, mk), c in pairs.most_common(40):
        P(f"  {pc:>12s} -> {nc:<12s} {kn:12s} {mk:14s} {c:7d} {c / cpu_s:8.2f}/CPU-s")
    P("-- run lengths (switch-in to switch-out), ms: n, p10, median, mean, p90, p99; ends")

    def q(v, x):
        return v[min(len(v) - 1, int(x * len(v)))] / 1e6
    for c in sorted(runs, key=lambda c: -len(runs[c])):
        v = sorted(runs[c])
        P(f"  {c:12s} n={len(v):6d} p10={q(v, .1):8.3f} p50={q(v, .5):8.3f} mean={sum(v) / len(v) / 1e6:8.3f} p90={q(v, .9):8.3f} p99={q(v, .99):8.2f}  {dict(run_end[c])}")
    P("-- waits (voluntary switch-out to next switch-in), ms")
    for c in sorted(waits, key=lambda c: -len(waits[c])):
        v = sorted(waits[c])
        P(f"  {c:12s} n={len(v):6d} p10={q(v, .1):8.3f} p50={q(v, .5):8.3f} mean={sum(v) / len(v) / 1e6:8.3f} p90={q(v, .9):8.3f}")
    P("-- a build alone (see comment in the code): switch-outs of build tasks, per build CPU-s")
    tot = sum(c for (k, _), c in model.items() if k != "in")
    for (k, to), c in sorted(model.items()):
        P(f"  {k:12s} -> {to:42s} {c:7d} {c / cpu_s:8.2f}/CPU-s  {100 * c / max(1, tot):5.1f}%")
    P(f"  total {tot} = {tot / cpu_s:.1f}/CPU-s (involuntary by foreign/kthread excluded)")
    P("-- 10-s buckets: build CPU-s, voluntary, exit, involuntary switch-outs, (vol+exit)/CPU-s")
    rates = []
    for b in sorted(bucket_cpu):
        c = bucket_cpu[b] / 1e9
        v, e, i = bucket_sw[b]["voluntary"], bucket_sw[b]["exit"], bucket_sw[b]["involuntary"]
        if c > 1.0 and (b + 1) * BUCKET <= last_ts - first_ts:
            rates.append((v + e) / c)
        P(f"  {b * 10:4d}-{b * 10 + 10:<4d}s {c:6.2f} {v:6d} {e:6d} {i:6d}  {(v + e) / max(c, 1e-9):7.1f}")
    if len(rates) > 1:
        mean = sum(rates) / len(rates)
        sd = (sum((x - mean) ** 2 for x in rates) / (len(rates) - 1)) ** 0.5
        P(f"  full buckets: (voluntary + exit) switch-outs per build CPU-s mean {mean:.1f}, sd {sd:.1f}, min {min(rates):.1f}, max {max(rates):.1f}")
    # execs by comm, processes in the tree
    ex = collections.Counter()
    last = {}
    for kind, ts, cpu, f in recs:
        if kind == TASK and f[0] in tree and ts < last_ts:
            if ts < first_ts:
                last[f[0]] = f[2]
                continue
            if f[0] in last and last[f[0]] != f[2]:
                ex[f[2]] += 1
            last[f[0]] = f[2]
    P("-- execs in the tree by new comm: " + ", ".join(f"{c} {k}" for c, k in ex.most_common(15)))
    P(f"   cc1 execs per build CPU-s: {ex['cc1'] / cpu_s:.2f}; switches per cc1: {n / max(1, ex['cc1']):.1f}")
    P("-- tlb_flush of the tree (reason, size class): " + ", ".join(f"{k}: {v}" for k, v in sorted(flushes.items())))
    # overlap of cc1 and as of one gcc (a -pipe build runs them at once)
    kids = collections.defaultdict(list)
    for c, p in r.parent.items():
        if p in tree:
            kids[p].append(c)
    print("\n".join(out))


def excerpt(rundir, start_s, len_s, path):
    r = Run(rundir)
    tree = r.tree
    t0 = next(ts for k, ts, _, _ in r.recs if k != TASK)
    lo, hi = t0 + int(float(start_s) * 1e9), t0 + int((float(start_s) + float(len_s)) * 1e9)
    # Task records: the latest of every pid before the window, then those inside it.
    latest, keep = {}, []
    for rec in r.recs:
        kind, ts, cpu, f = rec
        if ts < lo:
            if kind == TASK:
                latest[f[0]] = rec
            continue
        if ts >= hi:
            break
        if kind == TASK:
            if f[0] in tree:
                keep.append(rec)
            else:
                latest[f[0]] = rec
            continue
        if kind == SWITCH:
            prev, _, nxt = f
            if prev not in tree and nxt not in tree:
                continue
            for p in (prev, nxt):
                if p in latest and p not in tree or p in latest and not any(True for _ in ()):
                    pass
            keep.append(rec)
        elif kind == FLUSH and f[0] in tree:
            keep.append(rec)
    used = set()
    for kind, ts, cpu, f in keep:
        if kind == SWITCH:
            used.update((f[0], f[2]))
        elif kind == FLUSH:
            used.add(f[0])
    pre = [(TASK, lo, 0, latest[p][3]) for p in sorted(used) if p in latest and p != 0]
    recs = pre + keep
    recs.sort(key=lambda x: x[1])  # stable: a task record stays before the events at its time
    header = dict(r.header)
    header["notes"] = list(header.get("notes") or []) + [
        f"excerpt of {rundir.rstrip('/').split('/')[-1]}/build.flushtrace: {len_s} s from "
        f"{start_s} s after its first event, reduced to the build's process tree (switches "
        "with either side in the tree, the tree's flushes, task records of the pids used; "
        "tools/calibrate/kbuild_switches.py excerpt)",
        "build tree pids: " + " ".join(str(p) for p in sorted(used) if p in tree)]
    trailer = dict(r.trailer)
    trailer["duration_ns"] = hi - lo
    trailer["interrupts"] = None
    write_trace(path, header, recs, trailer)
    print(f"{path}: {len(recs)} records")


if __name__ == "__main__":
    if sys.argv[1] == "analyse":
        analyse(sys.argv[2], *map(float, sys.argv[3:5]))
    elif sys.argv[1] == "excerpt":
        excerpt(*sys.argv[2:6])
    else:
        sys.exit(__doc__)
