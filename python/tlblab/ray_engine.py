"""The Ray engine of ``tlblab sweep``: the sweep's jobs as Ray tasks on a cluster.

The driver (this module, in the process that runs the sweep) opens the results directory with
the Rust writer (``tlblab._core.Sweep``), packs the jobs it still needs into batches, and
submits each batch as one Ray task. A task calls the Rust core inside the Ray worker
(``tlblab._core.execute_jobs``: no subprocess, no CLI) and returns the rows as JSON. The driver
takes rows back with ``ray.wait`` as tasks finish and hands each to the writer at once, which
journals it (fsync'd) and ignores a row it already has: a task that Ray retries after its
worker died is recorded once. Progress (k/N, the time left, failures) goes to standard error.

Workers must be able to import ``tlblab``: on one machine they use the driver's interpreter
and its site-packages; on a cluster install the wheel on every node, or hand it over with
``runtime_env`` (``{"py_modules": ["tlblab-….whl"]}`` or ``{"pip": [...]}``; docs/python.md).
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from . import _core
from ._core import TlblabError

#: Attempts Ray makes at a batch whose worker died (a crash, a kill, a lost node).
MAX_RETRIES = 4

#: Most jobs in one batch: a retried batch redoes at most this many.
MAX_BATCH = 64

#: Batches per CPU of the cluster, so a slow batch near the end leaves little idle time.
BATCHES_PER_CPU = 4


def _import_ray() -> Any:
    """Ray, or a TlblabError that says how to install it."""
    try:
        import ray
    except ImportError as e:
        raise TlblabError(
            "the Ray engine needs Ray in this Python "
            f"({sys.executable}): pip install 'ray>=2.52' (or pip install 'tlblab[ray]')"
        ) from e
    return ray


def batch_size(jobs: int, cpus: int) -> int:
    """Jobs per Ray task: about BATCHES_PER_CPU tasks per CPU, at least 1, at most MAX_BATCH.

    Tasks of many tiny jobs keep Ray's per-task cost (scheduling, a round trip to the worker,
    the result through the object store: about a millisecond) small against the work; enough
    tasks per CPU keep every CPU busy to the end.
    """
    if jobs <= 0:
        return 1
    return max(1, min(MAX_BATCH, math.ceil(jobs / (BATCHES_PER_CPU * max(1, cpus)))))


def _run_batch(jobs: list[str]) -> list[str]:
    """A Ray task: the rows of these jobs, computed by the Rust core in this worker."""
    from tlblab import _core as core

    return core.execute_jobs(jobs)


class _Progress:
    """k/N, the time left and failures on standard error, a line at most every second."""

    def __init__(self, total: int, done: int) -> None:
        self.total = total
        self.done = done
        self.start_done = done
        self.failed = 0
        self.start = time.monotonic()
        self.last = 0.0

    def update(self, finished: int, failed: int = 0, final: bool = False) -> None:
        self.done += finished
        self.failed += failed
        now = time.monotonic()
        if not final and now - self.last < 1.0:
            return
        self.last = now
        ran = self.done - self.start_done
        left = self.total - self.done
        eta = ""
        if ran > 0 and left > 0:
            eta = f", about {(now - self.start) / ran * left:.0f} s left"
        failures = f", {self.failed} failed" if self.failed else ""
        print(f"tlblab: sweep: {self.done}/{self.total} jobs{eta}{failures}", file=sys.stderr)


def run(
    spec: Path,
    out: Path,
    address: str | None = None,
    resume: bool = False,
    force: bool = False,
    runtime_env: dict[str, Any] | None = None,
    batch: int | None = None,
) -> str:
    """Run the sweep ``spec`` on Ray into ``out``; return the summary's JSON text.

    Args:
        spec: the sweep spec (TOML).
        out: the results directory.
        address: a Ray cluster's address (``HOST:PORT`` of its head, or ``auto``); none starts
            Ray in this process on this machine.
        resume: skip the jobs ``out`` already has results for.
        force: start over in a directory that has results.
        runtime_env: Ray's runtime_env for the workers (how the wheel reaches them).
        batch: jobs per task (default: :func:`batch_size`).

    Raises:
        TlblabError: Ray missing, a bad spec, or jobs that failed after Ray's retries (their
            rows are missing; run again with ``resume=True``).
    """
    ray = _import_ray()
    # The sweep is refused (bad spec, existing results) before Ray starts.
    sweep = _core.Sweep(str(spec), str(out), resume, force)
    pending = sweep.pending()
    total = sweep.total()
    # Nothing is sent outside this machine or its cluster.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    started = not ray.is_initialized()
    if started:
        if address is None:
            # Ray on this machine alone, in this process: on the loopback, no dashboard.
            ray.init(
                runtime_env=runtime_env,
                logging_level="ERROR",
                log_to_driver=False,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
            )
        else:
            ray.init(
                address=address, runtime_env=runtime_env, logging_level="ERROR", log_to_driver=False
            )
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        size = batch or batch_size(len(pending), cpus)
        task = ray.remote(max_retries=MAX_RETRIES)(_run_batch)
        waiting = {}
        for i in range(0, len(pending), size):
            chunk = pending[i : i + size]
            waiting[task.remote(chunk)] = chunk
        progress = _Progress(total, total - len(pending))
        print(
            f"tlblab: sweep: {len(pending)} jobs to run of {total}, on Ray "
            f"({cpus} CPUs, {len(waiting)} tasks of up to {size} jobs)",
            file=sys.stderr,
        )
        errors = []
        while waiting:
            ready, _ = ray.wait(list(waiting), num_returns=1)
            for ref in ready:
                chunk = waiting.pop(ref)
                try:
                    rows = ray.get(ref)
                except (
                    ray.exceptions.RayError
                ) as e:  # a job failed, or its worker after all retries
                    errors.append(_task_error(e))
                    progress.update(0, failed=len(chunk))
                    continue
                for row in rows:
                    sweep.record(row)
                progress.update(len(rows))
        progress.update(0, final=True)
    finally:
        if started:
            ray.shutdown()
    if errors:
        raise TlblabError(
            f"{progress.failed} of {len(pending)} jobs failed on Ray ({errors[0]}); "
            "the others are recorded: run again with --resume to retry the failed ones"
        )
    return sweep.finish()


def _task_error(e: Exception) -> str:
    """A failed task's error in one line: tlblab's own message when the job failed."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, TlblabError):
        return str(cause)
    return str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
