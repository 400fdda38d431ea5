"""The Ray engine of ``tlblab sweep``: the sweep's jobs as Ray tasks on a cluster.

The driver (this module, in the process that runs the sweep) opens the results directory with
the Rust writer (``tlblab._core.Sweep``), packs the jobs it still needs into batches, and
submits each batch as one Ray task. A task calls the Rust core inside the Ray worker
(``tlblab._core.execute_jobs``: no subprocess, no CLI) and returns the rows as JSON. The driver
takes rows back with ``ray.wait`` as tasks finish and hands each to the writer, which appends
it to the journal at once and ignores a row it already has: a task that Ray retries after its
worker died is recorded once. Progress (k/N, the time left, failures) goes to standard error.

Workers must be able to import ``tlblab``: on one machine they use the driver's interpreter
and its site-packages; on a cluster install the wheel on every node, or hand it over with
``runtime_env`` (``{"py_modules": ["tlblab-….whl"]}`` or ``{"pip": [...]}``; docs/python.md).
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
from os import PathLike
from typing import Any

from . import _core
from ._core import TlblabError
from ._progress import Progress

#: Attempts Ray makes at a batch whose worker died (a crash, a kill, a lost node).
MAX_RETRIES = 4

#: Most jobs in one batch: a retried batch redoes at most this many.
MAX_BATCH = 64

#: Batches per CPU of the cluster, so a slow batch near the end leaves little idle time.
BATCHES_PER_CPU = 4


#: Longest wait for a task before the driver looks for a signal, seconds.
WAIT_S = 0.2


class Interrupted(KeyboardInterrupt):
    """The sweep was stopped by a signal (SIGINT or SIGTERM); the finished jobs are kept."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


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


def run(
    spec: str | PathLike[str],
    out: str | PathLike[str] | None = None,
    address: str | None = None,
    resume: bool = False,
    force: bool = False,
    runtime_env: dict[str, Any] | None = None,
    batch: int | None = None,
    progress: bool = True,
) -> str:
    """Run the sweep ``spec`` on Ray into ``out``; the summary's JSON (as ``summary.json``).

    Args:
        spec: the sweep spec (TOML).
        out: the results directory (default ``sweep-NAME``).
        address: a Ray cluster's address (``HOST:PORT`` of its head, or ``auto``); none starts
            Ray in this process on this machine (or uses the Ray this process already runs).
        resume: go on with the directory's sweep, skipping its finished jobs.
        force: start over in a directory that has results.
        runtime_env: Ray's runtime_env for the workers (how the wheel reaches them).
        batch: jobs per task (default: :func:`batch_size`).
        progress: print k/N, the time left and failures on standard error.

    Raises:
        TlblabError: Ray missing, a bad spec, or a job that failed (the others are kept: run
            again with ``resume=True``).
    """
    _import_ray()
    # The spec and the directory are checked before Ray starts.
    sweep = _core.Sweep(spec, out, resume, force)
    return drive(sweep, address=address, runtime_env=runtime_env, batch=batch, progress=progress)


def drive(
    sweep: _core.Sweep,
    address: str | None = None,
    runtime_env: dict[str, Any] | None = None,
    batch: int | None = None,
    progress: bool = True,
) -> str:
    """Run an opened sweep's pending jobs on Ray, record their rows, and finish it.

    Arguments as for :func:`run`; returns the summary's JSON.
    """
    ray = _import_ray()
    pending = sweep.pending()
    total = sweep.total()
    # Nothing is sent outside this machine or its cluster.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Ray 2.5x warns, once per process, of a GPU default it will change; tlblab uses no GPU.
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    started = not ray.is_initialized()
    if started:
        if address is None:
            # Ray on this machine alone, in this process: on the loopback, no dashboard, and its
            # workers at the caller's priority like the local engine's threads (Ray's default
            # is nice 15, which leaves them the CPU time other programs do not take).
            os.environ.setdefault("RAY_worker_niceness", "0")
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
    errors: list[tuple[int, str]] = []
    shown = Progress(sweep.name, total, total - len(pending))
    # Ctrl-C and SIGTERM are noted and acted on between waits: Ray's driver may take the default
    # SIGINT handler over, and a signal must stop the sweep whatever Ray does with it.
    caught: list[int] = []
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda signum, _frame: caught.append(signum))
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        size = batch or batch_size(len(pending), cpus)
        task = ray.remote(max_retries=MAX_RETRIES)(_run_batch)
        waiting = {}
        for i in range(0, len(pending), size):
            chunk = pending[i : i + size]
            waiting[task.remote(chunk)] = chunk
        if progress:
            print(
                f"tlblab: sweep {sweep.name}: {len(pending)} of {total} jobs to run on Ray "
                f"({cpus} CPUs, {len(waiting)} tasks of up to {size} jobs)",
                file=sys.stderr,
                flush=True,
            )
        failed = 0
        while waiting:
            if caught:
                for ref in waiting:
                    ray.cancel(ref)
                raise Interrupted(caught[0])
            ready, _ = ray.wait(list(waiting), num_returns=1, timeout=WAIT_S)
            for ref in ready:
                chunk = waiting.pop(ref)
                try:
                    rows = ray.get(ref)
                except (
                    ray.exceptions.RayError
                ) as e:  # a job failed, or its worker after all retries
                    errors.append((_first_index(chunk), _task_error(e)))
                    failed += len(chunk)
                else:
                    for row in rows:
                        sweep.record(row)
                if progress:
                    shown.update(sweep.done(), failed)
        if progress:
            shown.update(sweep.done(), failed, final=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if started:
            ray.shutdown()
    if errors:
        # As the local engine says it: the first failure in the sweep's order.
        raise TlblabError(
            f"{failed} job(s) failed (every other job ran); the {sweep.done()} finished jobs are "
            f"kept in {sweep.out} and resuming (`--resume`, `resume=True`) runs the rest: "
            f"{min(errors)[1]}"
        )
    return sweep.finish()


def _first_index(chunk: list[str]) -> int:
    """The plan index of a batch's first job."""
    return int(json.loads(chunk[0])["index"])


def _task_error(e: Exception) -> str:
    """A failed task's error in one line: tlblab's own message when a job failed."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, TlblabError):
        return str(cause)
    text = str(e).strip()
    return text.splitlines()[-1] if text else type(e).__name__
