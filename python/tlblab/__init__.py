"""tlblab for Python: x86 TLB-flush policies simulated, as DataFrames.

The same numbers as the ``tlblab`` command line, from the same Rust code (``tlblab._core``):

- :func:`run` runs a scenario under policies (``tlblab sim run``),
- :func:`check` runs the safety checker (``tlblab sim check``),
- :func:`study` runs a built-in study (``tlblab sim study``),
- :func:`replay` replays a flush trace under policies or flush ceilings (``tlblab sim replay``),
- :func:`sweep` runs a sweep spec on this machine or on a Ray cluster (``tlblab sweep``).

Each returns a :class:`pandas.DataFrame`; the ``*_json`` twins return the command line's
``--format json`` text byte for byte, and every DataFrame keeps that text in
``df.attrs["json"]``. Errors are raised as :class:`TlblabError` (a :class:`ValueError`) with the
message ``tlblab: error:`` prints. The simulation runs without the GIL, so threads can run several
at once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Union

import pandas as pd

from . import _core
from ._core import TlblabError
from ._progress import Progress

__all__ = [
    "TlblabError",
    "__version__",
    "check",
    "check_json",
    "replay",
    "replay_json",
    "run",
    "run_json",
    "study",
    "study_json",
    "sweep",
]

__version__: str = _core.version()

StrPath = Union[str, "PathLike[str]"]


def study_json(
    name: str,
    quick: bool = False,
    seeds: int | None = None,
    first_seed: int = 1,
    noise: float = 1.0,
    explain: bool = False,
    without: Sequence[str] = (),
) -> str:
    """Run a built-in study and return ``tlblab sim study NAME --format json``'s text.

    Args:
        name: ``s1-pti`` … ``s5-xpfo`` (or ``S1`` … ``S5``), ``all``, or a comma-separated list.
        quick: shrink every part (fewer iterations, smaller windows) for smoke runs.
        seeds: runs per policy (default: the study's own, 3 or 5).
        first_seed: the first seed; the others follow it.
        noise: the noise band in percent (a change must lie wholly outside ±noise).
        explain: also run every part with each mechanism switched off in turn.
        without: mechanisms switched off in every run (``tlblab sim mechanisms``).

    Raises:
        TlblabError: an unknown study or an option out of range, with the CLI's message.
    """
    return _core.study_json(name, quick, seeds, first_seed, noise, explain, list(without))


def study(
    name: str,
    quick: bool = False,
    seeds: int | None = None,
    first_seed: int = 1,
    noise: float = 1.0,
    explain: bool = False,
    without: Sequence[str] = (),
) -> pd.DataFrame:
    """Run a built-in study: one row per part × policy × measure.

    Columns: ``study``, ``part``, ``machine``, ``cpus``, ``scenario``, ``policy``,
    ``baseline`` (is this the part's baseline policy), ``measure``, ``label``,
    ``lower_is_better``, ``n``, ``mean``, ``sd``, ``sem``, ``ratio`` (mean ratio to the
    baseline), ``ci_low``, ``ci_high`` (its interval), ``verdict`` (``higher``, ``lower``,
    ``within-noise``, ``not-significant``, ``no-interval``; none for the baseline),
    ``significant`` and ``note``. The report's JSON (as :func:`study_json` returns it) is in
    ``df.attrs["json"]``. Arguments as for :func:`study_json`.
    """
    text = study_json(name, quick, seeds, first_seed, noise, explain, without)
    report = json.loads(text)
    reports = report.get("studies", [report])
    rows = [row for r in reports for row in _study_rows(r)]
    frame = pd.DataFrame(rows, columns=_STUDY_COLUMNS)
    frame.attrs["json"] = text
    return frame


_STUDY_COLUMNS = [
    "study",
    "part",
    "machine",
    "cpus",
    "scenario",
    "policy",
    "baseline",
    "measure",
    "label",
    "lower_is_better",
    "n",
    "mean",
    "sd",
    "sem",
    "ratio",
    "ci_low",
    "ci_high",
    "verdict",
    "significant",
    "note",
]


def _study_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One study report's part × policy × measure rows."""
    rows = []
    for part in report["parts"]:
        about = {m["key"]: m for m in part["measures"]}
        for entry in part["policies"]:
            for m in entry["measures"]:
                ratio = m.get("ratio") or {}
                ci = ratio.get("ci") or {}
                measure = about.get(m["measure"], {})
                rows.append(
                    {
                        "study": report["study"],
                        "part": part["label"],
                        "machine": part["machine"]["name"],
                        "cpus": part["cpus"],
                        "scenario": part["scenario"]["name"],
                        "policy": entry["policy"]["name"],
                        "baseline": entry["baseline"],
                        "measure": m["measure"],
                        "label": measure.get("label"),
                        "lower_is_better": measure.get("lower_is_better"),
                        "n": len(m["values"]),
                        "mean": m["mean"],
                        "sd": m["stddev"],
                        "sem": m["sem"],
                        "ratio": (ratio.get("ratios") or {}).get("mean"),
                        "ci_low": ci.get("low"),
                        "ci_high": ci.get("high"),
                        "verdict": m.get("effect"),
                        "significant": m.get("significant"),
                        "note": m.get("note"),
                    }
                )
    return rows


def replay_json(
    trace: StrPath,
    policies: Sequence[str] = ("linux-6.18",),
    machine: str = "skylake",
    ceiling: Sequence[int] | None = None,
    cpus: int | None = None,
    seed: int = 1,
    refill: str = "flushed",
    working_set: int = 64,
    idle_gap_us: int = 1000,
    recorded_ceiling: int = 33,
    allow_truncated: bool = False,
    input_format: str | None = None,
    replacement: str | None = None,
    paging_levels: int = 4,
) -> str:
    """Replay a flush trace and return ``tlblab sim replay TRACE --format json``'s text.

    Args:
        trace: a tlblab trace file, or ftrace / ``perf script`` text.
        policies: built-in policy names or policy ``.toml`` files.
        machine: a preset name, ``host``, or a preset ``.toml`` file.
        ceiling: sweep ``tlb_single_page_flush_ceiling`` over these values under the first
            policy instead.
        cpus: simulated CPUs (default: one more than the highest CPU in the trace).
        seed: seed of the model's random streams.
        refill: ``none``, ``flushed`` or ``working-set``.
        working_set: pages of each thread's working set (with ``refill="working-set"``).
        idle_gap_us: without sched_switch records, events on one CPU at most this far apart
            mean the thread ran in between.
        recorded_ceiling: the recording kernel's ceiling.
        allow_truncated: read a truncated trace file up to its last complete record.
        input_format: ``ftrace`` or ``perf`` for text traces (default: detected).
        replacement: ``lru`` or ``plru`` (default: the preset's).
        paging_levels: 4, or 5 (LA57).

    Raises:
        TlblabError: an unreadable trace, unknown policy or machine, with the CLI's message.
    """
    return _core.replay_json(
        trace,
        list(policies),
        machine,
        None if ceiling is None else list(ceiling),
        cpus,
        seed,
        refill,
        working_set,
        idle_gap_us,
        recorded_ceiling,
        allow_truncated,
        input_format,
        replacement,
        paging_levels,
    )


def replay(trace: StrPath, **options: Any) -> pd.DataFrame:
    """Replay a flush trace: one row per policy (or per ceiling with ``ceiling=[...]``).

    The columns are the report's per-policy fields, nested ones joined with ``.``
    (``cost.total_cycles``, ``slip.max_ns``, …), after ``machine``. The report's JSON is in
    ``df.attrs["json"]``. Options as for :func:`replay_json`.
    """
    text = replay_json(trace, **options)
    report = json.loads(text)
    rows = report["policies"] if "policies" in report else report["rows"]
    frame = pd.json_normalize(rows, sep=".")
    frame.insert(0, "machine", report["machine"])
    frame.attrs["json"] = text
    return frame


def run_json(
    scenario: str,
    policies: Sequence[str] = ("linux-6.18",),
    machine: str = "skylake",
    cpus: int = 4,
    seeds: int = 3,
    first_seed: int = 1,
    without: Sequence[str] = (),
    explain: bool = False,
    noise: float = 1.0,
    **params: int | str,
) -> str:
    """Run a scenario under policies; ``tlblab sim run SCENARIO --format json``'s text.

    Args:
        scenario: the scenario (``tlblab sim scenarios`` lists them).
        policies: built-in policy names or policy ``.toml`` files; the first is the baseline.
        machine: a preset name, ``host``, or a preset ``.toml`` file.
        cpus: simulated CPUs, 1 to 4096.
        seeds: runs per policy, with seeds ``first_seed``, ``first_seed + 1``, ….
        first_seed: the first seed.
        without: mechanisms switched off in every run (``tlblab sim mechanisms``).
        explain: also run each policy with each mechanism off in turn.
        noise: the noise band in percent.
        **params: the scenario's parameters by the CLI's names (``iterations=200``,
            ``pages=64``, ``mode="processes"``, ``op="mprotect"``, …).

    Raises:
        TlblabError: an unknown scenario, policy, machine or parameter, a value out of range.
    """
    return _core.run_json(
        scenario,
        list(policies),
        machine,
        cpus,
        seeds,
        first_seed,
        list(without),
        explain,
        noise,
        dict(params),
    )


def run(scenario: str, **options: Any) -> pd.DataFrame:
    """Run a scenario under policies: one row per policy × seed.

    Columns: ``policy``, ``seed``, ``value`` (the scenario's metric), then per policy its
    ``mean``, ``sd``, ``ratio`` (to the first policy), ``ci_low``, ``ci_high`` and ``verdict``,
    then the run's scalar counters (``ipis_sent``, ``elapsed_cycles``, …, nested ones joined
    with ``.``). The report's JSON is in ``df.attrs["json"]``. Options as for :func:`run_json`.
    """
    text = run_json(scenario, **options)
    report = json.loads(text)
    first_seed = int(options.get("first_seed", 1))
    rows = []
    for entry in report["policies"]:
        ratio = entry.get("ratio") or {}
        ci = ratio.get("ci") or {}
        for i, (value, counters) in enumerate(zip(entry["values"], entry["runs"])):
            flat = pd.json_normalize(counters, sep=".").iloc[0].to_dict()
            rows.append(
                {
                    "policy": entry["policy"]["name"],
                    "seed": first_seed + i,
                    "value": value,
                    "mean": entry["mean"],
                    "sd": entry["stddev"],
                    "ratio": (ratio.get("ratios") or {}).get("mean"),
                    "ci_low": ci.get("low"),
                    "ci_high": ci.get("high"),
                    "verdict": entry.get("verdict"),
                    # Per-CPU and per-task lists stay in the JSON.
                    **{k: v for k, v in flat.items() if not isinstance(v, list)},
                }
            )
    frame = pd.DataFrame(rows)
    frame.attrs["json"] = text
    return frame


def check_json(
    scenario: str,
    policies: Sequence[str] = ("linux-6.18",),
    machine: str = "skylake",
    cpus: int = 4,
    schedules: int = 1000,
    first_seed: int = 1,
    max_ipi_delay: int = 20_000,
    disturb_every: int = 200_000,
    speed_runs: int = 5,
    **params: int | str,
) -> str:
    """Run the safety checker; ``tlblab sim check SCENARIO --format json``'s text.

    One report per policy (an object for one policy, a list for several), each over
    ``schedules`` perturbed schedules with seeds from ``first_seed``: IPIs delivered up to
    ``max_ipi_delay`` cycles late, a disturbance every ``disturb_every`` cycles per CPU on
    average (0: none), and ``speed_runs`` unperturbed runs for the policy's speed.
    ``**params`` as for :func:`run_json`.

    Raises:
        TlblabError: an unknown scenario, policy, machine or parameter, a value out of range.
    """
    return _core.check_json(
        scenario,
        list(policies),
        machine,
        cpus,
        schedules,
        first_seed,
        max_ipi_delay,
        disturb_every,
        speed_runs,
        dict(params),
    )


def check(scenario: str, **options: Any) -> pd.DataFrame:
    """Run the safety checker: one row per policy.

    Columns: ``policy``, ``schedules``, ``accesses``, ``window_uses``, ``unfinished``,
    ``violations``, ``schedules_with_violations``, ``witnesses`` (how many kept) and the
    report's other scalar fields. The JSON is in ``df.attrs["json"]``. Options as for
    :func:`check_json`. A violation is a row's count, not an error (``tlblab sim check``
    exits 1 for it).
    """
    text = check_json(scenario, **options)
    report = json.loads(text)
    reports = report if isinstance(report, list) else [report]
    rows = []
    for r in reports:
        row = {"policy": r["policy"]["name"]}
        row.update({k: v for k, v in r.items() if not isinstance(v, (dict, list))})
        row["witnesses"] = len(r["witnesses"])
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame.attrs["json"] = text
    return frame


def sweep(
    spec: StrPath,
    engine: str = "local",
    address: str | None = None,
    out: StrPath | None = None,
    resume: bool = False,
    force: bool = False,
    progress: bool = True,
) -> pd.DataFrame:
    """Run a sweep spec (docs/sweep.md), as ``tlblab sweep SPEC``; its results, one row per job.

    Args:
        spec: the sweep spec, a TOML file.
        engine: ``local`` (every core of this machine, in Rust) or ``ray`` (a Ray cluster;
            docs/python.md).
        address: the Ray cluster's address (``HOST:PORT`` of its head, or ``auto``); none
            starts Ray in this process on this machine.
        out: the results directory (default ``sweep-NAME``, NAME the spec's ``name``).
        resume: go on with a directory's sweep: its finished jobs are not run again.
        force: start over in a directory that has results.
        progress: print k/N, the time left and failures on standard error.

    The directory gets the spec, the environment, the journal, ``results.parquet``,
    ``results.jsonl`` (one row per job in the sweep's order: the same bytes with either engine),
    ``summary.json`` and ``summary.txt``; the DataFrame is ``results.parquet`` read back and
    ``df.attrs["summary"]`` the summary. Ctrl-C stops the sweep at once and keeps the jobs
    finished (with the local engine, running jobs are abandoned and their runs end at once,
    not in the background of the session): ``resume=True`` runs the rest.

    Raises:
        TlblabError: a bad spec (naming its file, line and key), a directory with results
            without ``resume`` or ``force``, or a failed job (the finished ones are kept).
    """
    if engine not in ("local", "ray"):
        raise TlblabError(f"--engine {engine}: give local or ray")
    if address is not None and engine != "ray":
        raise TlblabError("--address is for --engine ray")
    run = _core.Sweep(spec, out, resume, force)
    if engine == "local":
        shown = Progress(run.name, run.total(), run.done()) if progress else None
        run.run_local(shown)
        if shown is not None:
            shown.update(run.done(), shown.failed, final=True)
        summary = run.finish()
    else:
        from .ray_engine import drive

        summary = drive(run, address=address, progress=progress)
    frame = pd.read_parquet(Path(run.out) / "results.parquet")
    frame.attrs["summary"] = json.loads(summary)
    return frame
