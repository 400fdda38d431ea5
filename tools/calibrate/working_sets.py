#!/usr/bin/env python3
"""Per-iteration user working sets of tlblab's live scenario loops, from a Valgrind lackey trace.

Runs `tlblab bench SCENARIO ...` under `valgrind --tool=lackey --trace-mem=yes
--trace-syscalls=yes --trace-children=yes`, then, in each worker process, takes the loop's own
system call (the process's most frequent one) as the iteration boundary and counts, per
iteration, the distinct 4 KiB pages the user code fetched from and loaded from or stored to.
Prints the median over the middle 80% of iterations, per process (docs/workloads.md, "Working
sets"). The kernel's own references are not in the trace.

Usage: working_sets.py TLBLAB SCENARIO [bench options...]
"""
import collections
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile

SYSCALL = re.compile(r"^SYSCALL\[(\d+),(\d+)\]\((\d+)\) (sys_\w+) \(")


def iterations(path):
    """(loop syscall name, [(code pages, data pages)] per iteration) of one process's log."""
    counts = collections.Counter()
    with open(path, errors="replace") as f:
        for line in f:
            m = SYSCALL.match(line)
            if m:
                counts[m.group(4)] += 1
    if not counts:
        return None, []
    loop, _ = counts.most_common(1)[0]
    out, code, data, started = [], set(), set(), False
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("I "):
                code.add(int(line[3:].split(",")[0], 16) >> 12)
            elif line[:3] in (" L ", " S ", " M "):
                data.add(int(line[3:].split(",")[0], 16) >> 12)
            else:
                m = SYSCALL.match(line)
                if m and m.group(4) == loop:
                    if started:
                        out.append((len(code), len(data)))
                    started = True
                    code, data = set(), set()
    return loop, out


def main():
    tlblab, scenario, *opts = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            "valgrind", "--tool=lackey", "--trace-mem=yes", "--trace-syscalls=yes",
            "--trace-children=yes", f"--log-file={tmp}/lk.%p", tlblab, "bench", scenario,
            *opts, "--runs", "1", "--run-ms", "20", "--warmup-ms", "0", "--no-trace",
            "--no-overhead", "-q", "-o", os.path.join(tmp, "out.json"), "--force",
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for path in sorted(glob.glob(f"{tmp}/lk.*")):
            loop, its = iterations(path)
            if len(its) < 50:
                continue
            mid = its[len(its) // 10 : len(its) * 9 // 10]
            code = statistics.median(c for c, _ in mid)
            data = statistics.median(d for _, d in mid)
            print(f"{scenario} {' '.join(opts)}: process {path.rsplit('.', 1)[1]}: loop syscall "
                  f"{loop}, {len(its)} iterations; per iteration (median of the middle "
                  f"{len(mid)}): {code:g} code pages, {data:g} data pages")


if __name__ == "__main__":
    main()
