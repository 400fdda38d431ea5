#!/usr/bin/env python3
"""A fuzz census of tlblab's file inputs: mutate a valid file of each kind, run the command
that reads it, and count the outcomes.

Every case should end with exit 0 (the mutation left the input valid) or 2 (bad input), within a
second, with a message that names the file, and with no control byte on the terminal. The census
prints, per kind, how many cases ended how, and lists the refusals that did not name their file
(one line per distinct message, numbers masked).

    python3 scripts/fuzz-census.py [--tlblab target/release/tlblab] [--cases 200] [--seed 1]

Each case runs alone with a 20 s limit; the seed makes the mutations repeatable.
"""

from __future__ import annotations

import argparse
import collections
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
LIMIT_S = 20.0
SLOW_S = 1.0
# Control bytes other than the line break and tab, DEL, and the text-reordering characters.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
EXTREMES = [
    "0",
    "-1",
    "1e308",
    "-1e308",
    "18446744073709551616",
    "9223372036854775807",
    "nan",
    "inf",
    "0.0000001",
    "4294967296",
    '"x"',
    "[]",
    "{}",
    "true",
]
JUNK = [
    b"\x00",
    b"\xff\xfe",
    b"\x1b[31m",
    b"\xe2\x80\xae",
    b"\n",
    b"#",
    b"=",
    b"[",
    b"]",
    b'"',
    b"\\",
]


@dataclass
class Kind:
    """One kind of input file: a valid seed and the command that reads it (`{f}` is the file)."""

    name: str
    seed: bytes
    suffix: str
    command: list[str]
    textual: bool
    # Set up a directory the command needs (the sweep's resume); gets the case's directory and file.
    prepare: Callable[[Path, Path], None] | None = None
    # The file name a refusal should give, when the command reads a copy (the sweep's journal).
    named: str | None = None


@dataclass
class Tally:
    """Outcomes of one kind's cases."""

    cases: int = 0
    exits: collections.Counter[int] = field(default_factory=collections.Counter)
    panics: int = 0
    timeouts: int = 0
    slow: int = 0
    unnamed: collections.Counter[str] = field(default_factory=collections.Counter)
    control_lines: int = 0
    worst_s: float = 0.0


def mutate(data: bytes, textual: bool, rng: random.Random) -> bytes:
    """One random mutation of `data`: a cut, a flipped byte, junk inserted, a line dropped,
    doubled or swapped, or (in text) a number replaced with an extreme."""
    choice = rng.randrange(9 if textual else 4)
    if not data:
        return rng.choice(JUNK)
    at = rng.randrange(len(data))
    if choice == 0:
        return data[:at]
    if choice == 1:
        return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :]
    if choice == 2:
        return data[:at] + rng.choice(JUNK) + data[at:]
    if choice == 3:
        return data[:at] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))) + data[at:]
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if choice == 4:
        del lines[i]
    elif choice == 5:
        lines.insert(i, lines[j])
    elif choice == 6:
        lines[i], lines[j] = lines[j], lines[i]
    elif choice == 7:
        # A whole TOML table (or the lines up to the next blank one) dropped.
        end = next(
            (
                k
                for k in range(i + 1, len(lines))
                if lines[k].startswith(b"[") or not lines[k].strip()
            ),
            len(lines),
        )
        del lines[i:end]
    else:
        numbers = list(re.finditer(rb"-?\d+(\.\d+)?", data))
        if not numbers:
            return data[:at]
        m = rng.choice(numbers)
        return data[: m.start()] + rng.choice(EXTREMES).encode() + data[m.end() :]
    return b"\n".join(lines)


def run_case(tlblab: Path, kind: Kind, data: bytes, work: Path, tally: Tally) -> None:
    """Write the case, run its command, and add the outcome to `tally`."""
    case = work / f"case{kind.suffix}"
    case.write_bytes(data)
    if kind.prepare:
        kind.prepare(work, case)
    argv = [str(tlblab)] + [
        a.replace("{f}", str(case)).replace("{w}", str(work)) for a in kind.command
    ]
    start = time.monotonic()
    try:
        done = subprocess.run(argv, check=False, capture_output=True, timeout=LIMIT_S, cwd=work)
    except subprocess.TimeoutExpired:
        tally.cases += 1
        tally.timeouts += 1
        return
    took = time.monotonic() - start
    tally.cases += 1
    tally.worst_s = max(tally.worst_s, took)
    tally.slow += took > SLOW_S
    tally.exits[done.returncode] += 1
    err = done.stderr.decode("utf-8", "replace")
    out = done.stdout.decode("utf-8", "replace")
    if done.returncode in (101, 134) or "panicked" in err:
        tally.panics += 1
    tally.control_lines += sum(bool(CONTROL.search(line)) for line in (out + err).splitlines())
    if done.returncode != 0 and (kind.named or case.name) not in err:
        message = err.strip().splitlines()[0] if err.strip() else "(no message)"
        tally.unnamed[re.sub(r"\d+", "N", message)[:160]] += 1


def kinds(tlblab: Path, seeds: Path) -> list[Kind]:
    """The input kinds, with seeds made by the binary itself from the repository's small inputs."""
    repro = ROOT / "crates/tlblab-cli/tests/data"
    fixtures = ROOT / "crates/tlblab-report/tests/fixtures"

    def out(*argv: str) -> bytes:
        return subprocess.run(
            [str(tlblab), *argv], capture_output=True, check=True, cwd=seeds
        ).stdout

    lackey = (repro / "golden.lackey").read_bytes()
    (seeds / "mem.lackey").write_bytes(lackey)
    out("sim", "convert", "mem.lackey", "-o", "mem.tlbt", "--force")
    flush_text = "".join(
        f"  worker-{100 + i % 3}  [{i % 2:03}] d..1.  {1000 + i * 0.000125:.6f}: tlb_flush: pages:{[1, 1, -1, 8][i % 4]} reason:{['remote shootdown', 'local mm shootdown', 'flush on task switch', 'remote ipi send'][i % 4]} ({i % 4})\n"
        for i in range(48)
    ).encode()
    (seeds / "trace.ftrace").write_bytes(flush_text)
    out("trace", "import", "trace.ftrace", "-o", "trace.flushtrace", "--force")
    champsim = b"".join(
        (0x400000 + 4 * i).to_bytes(8, "little")
        + bytes(8)
        + (0x7F0000001000 + 64 * i).to_bytes(8, "little")
        + bytes(24)
        + (0x7F0000002000 + 8 * i).to_bytes(8, "little")
        + bytes(8)
        for i in range(40)
    )
    spec = (
        b'name = "census"\ndescription = "census seed"\nseeds = 1\n'
        b'measures = ["scenario_metric", "ipis_per_op"]\n\n[[sweep]]\nlabel = "pages"\n'
        b'machine = "skylake"\ncpus = 4\nscenario = "storm"\npolicy = "linux-6.18"\npages = [1, 8]\niterations = 20\n'
    )
    (seeds / "sweep.toml").write_bytes(spec)
    out("sweep", "sweep.toml", "-o", "sweep", "--force")
    journal = (seeds / "sweep/journal.jsonl").read_bytes()

    def resume_dir(work: Path, case: Path) -> None:
        target = work / "sweep"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(seeds / "sweep", target)
        shutil.copy(case, target / "journal.jsonl")
        shutil.copy(seeds / "sweep.toml", work / "sweep.toml")

    run = ["sim", "run", "-s", "storm", "--cpus", "4", "--iterations", "20"]
    preset = out("sim", "machines", "show", "skylake", "--toml")
    policy = out("sim", "policies", "show", "linux-6.18+pti-deferred", "--toml")
    flush = (seeds / "trace.flushtrace").read_bytes()
    compact = (seeds / "mem.tlbt").read_bytes()
    study = (fixtures / "study-results-quick.min.json").read_bytes()
    bench = fixtures / "bench-madvise-busy.json"
    replay, text = ["sim", "replay", "{f}", "--cpus", "2"], ["--input-format", "ftrace"]
    report = ["report", "{f}", "--format", "text", "-o", "{w}/r.txt", "--force"]
    resume = ["sweep", "{w}/sweep.toml", "-o", "{w}/sweep", "--resume"]
    # name, seed, suffix, command, textual (line and number mutations apply)
    table: list[tuple[str, bytes, str, list[str], bool]] = [
        ("preset", preset, ".toml", [*run, "-m", "{f}"], True),
        ("policy", policy, ".toml", [*run, "-p", "linux-6.18,{f}"], True),
        ("flush trace", flush, ".flushtrace", replay, False),
        ("flush trace report", flush, ".flushtrace", ["trace", "report", "{f}"], False),
        ("ftrace text", flush_text, ".txt", [*replay, *text], True),
        ("lackey", lackey, ".lackey", ["sim", "trace", "{f}"], True),
        (
            "champsim",
            champsim,
            ".champsim",
            ["sim", "trace", "{f}", "--input-format", "champsim"],
            False,
        ),
        ("compact", compact, ".tlbt", ["sim", "trace", "{f}"], False),
        ("study json", study, ".json", report, True),
        ("bench json", bench.read_bytes(), ".json", ["compare", "{f}", str(bench)], True),
        ("sweep spec", spec, ".toml", ["sweep", "{f}", "--plan"], True),
    ]
    return [Kind(*row) for row in table] + [
        Kind("sweep journal", journal, ".jsonl", resume, True, resume_dir, "journal.jsonl")
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tlblab", type=Path, default=ROOT / "target/release/tlblab")
    parser.add_argument("--cases", type=int, default=200, help="mutated cases per kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", help="run only the kinds whose name contains this")
    args = parser.parse_args()
    tlblab = args.tlblab.resolve()
    rng = random.Random(args.seed)
    failed = False
    with tempfile.TemporaryDirectory(prefix="tlblab-census-") as tmp:
        seeds = Path(tmp) / "seeds"
        seeds.mkdir()
        print(
            f"{'kind':<20} {'cases':>5} {'exit 0':>6} {'exit 2':>6} {'other':>5} {'panic':>5} {'hang':>4} {'>1 s':>4} {'worst s':>7} {'unnamed':>7} {'ctrl':>4}"
        )
        unnamed_all: dict[str, collections.Counter[str]] = {}
        for kind in kinds(tlblab, seeds):
            if args.only and args.only not in kind.name:
                continue
            work = Path(tmp) / kind.name.replace(" ", "-")
            work.mkdir()
            tally = Tally()
            # The seed itself must pass, or the census of its mutations says nothing.
            run_case(tlblab, kind, kind.seed, work, tally)
            if tally.exits[0] != 1:
                print(f"{kind.name}: the unmutated seed is refused; fix the census")
                return 1
            tally = Tally()
            for _ in range(args.cases):
                run_case(tlblab, kind, mutate(kind.seed, kind.textual, rng), work, tally)
            other = sum(n for code, n in tally.exits.items() if code not in (0, 2))
            print(
                f"{kind.name:<20} {tally.cases:>5} {tally.exits[0]:>6} {tally.exits[2]:>6} {other:>5} {tally.panics:>5} "
                f"{tally.timeouts:>4} {tally.slow:>4} {tally.worst_s:>7.2f} {sum(tally.unnamed.values()):>7} {tally.control_lines:>4}"
            )
            if other:
                print(
                    f"  other exits: { {c: n for c, n in tally.exits.items() if c not in (0, 2)} }"
                )
            unnamed_all[kind.name] = tally.unnamed
            failed |= bool(
                other or tally.panics or tally.timeouts or tally.unnamed or tally.control_lines
            )
        for name, messages in unnamed_all.items():
            for message, n in messages.most_common():
                print(f"unnamed [{name}] ×{n}: {message}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
