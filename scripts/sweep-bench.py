"""Jobs/s of a sweep on this machine, the local engine against Ray, and Ray's cost per job.

Usage: .venv/bin/python scripts/sweep-bench.py [SPEC] [--cpus N] [--batch N ...]
(SPEC: default scripts/sweep-bench.toml, jobs of about a second.)

Runs every job of SPEC once alone (its cost), then the whole sweep with the local engine
(rayon over every core, in Rust) and on a Ray started in this process with the same CPUs
(after a warm-up task, so worker start-up is not counted), once per batch size asked for
(default: the engine's own choice, and one job per task), in --repeat rounds that interleave
the engines; the best of each counts. Ray's overhead per job is its extra
wall time against the local engine's, times the CPUs, over the jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tlblab import _core, ray_engine

T = TypeVar("T")


def timed(f: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[float, T]:
    """Wall time of f(*args, **kwargs), and its value."""
    start = time.perf_counter()
    value = f(*args, **kwargs)
    return time.perf_counter() - start, value


def events(out: Path) -> int:
    """Simulated events of a results directory's rows, when the rows count them."""
    total = 0
    for line in (out / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        for key in ("events", "model_events"):
            value = row.get(key) or (row.get("counters") or {}).get(key)
            if isinstance(value, int):
                total += value
                break
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "spec", type=Path, nargs="?", default=Path(__file__).with_name("sweep-bench.toml")
    )
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--batch", type=int, action="append", help="jobs per Ray task")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of each engine")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sweep-bench-"))

    jobs = _core.Sweep(args.spec, tmp / "plan").pending()
    n = len(jobs)
    costs = [timed(_core.execute_jobs, [job])[0] for job in jobs]
    work = sum(costs)
    print(
        f"{n} jobs, {statistics.mean(costs):.3f} s each alone "
        f"(min {min(costs):.3f}, max {max(costs):.3f})"
    )

    def local(out: Path) -> None:
        run = _core.Sweep(args.spec, out)
        run.run_local()
        run.finish()

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    # Ray runs its workers at nice 15 unless told otherwise: on a machine that others load, they
    # would measure those others, not Ray. The local engine runs at the caller's priority.
    os.environ.setdefault("RAY_worker_niceness", "0")
    import ray

    ray.init(
        num_cpus=args.cpus,
        include_dashboard=False,
        logging_level="ERROR",
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
    )
    warm = ray.remote(lambda: __import__("tlblab._core").__name__)
    ray.get([warm.remote() for _ in range(args.cpus)])
    batches = args.batch or [ray_engine.batch_size(n, args.cpus), 1]
    # Rounds interleave the engines, so that a change in the machine's load falls on both.
    times: dict[str, list[float]] = {"local": []} | {f"ray-{b}": [] for b in batches}
    want = None
    for r in range(args.repeat):
        out = tmp / f"local-{r}"
        times["local"].append(timed(local, out)[0])
        want = (out / "results.jsonl").read_bytes()
        for b in batches:
            out = tmp / f"ray-{b}-{r}"
            times[f"ray-{b}"].append(
                timed(ray_engine.run, args.spec, out, batch=b, progress=False)[0]
            )
            if (out / "results.jsonl").read_bytes() != want:
                raise SystemExit(f"ray (batch {b}) gave other results than the local engine")
    # Ray's own cost per task, without work to hide it: empty batches through tlblab._core,
    # all at once (throughput over the CPUs), and one after the other (a round trip).
    empty = ray.remote(ray_engine._run_batch)
    ray.get([empty.remote([]) for _ in range(50)])
    tasks = 1000
    t_many, _ = timed(lambda: ray.get([empty.remote([]) for _ in range(tasks)]))
    t_one, _ = timed(lambda: [ray.get(empty.remote([])) for _ in range(200)])
    ray.shutdown()

    ev = events(tmp / "local-0")
    best_local = min(times["local"])
    print(
        f"local: best {best_local:.2f} s of {args.repeat} (median "
        f"{statistics.median(times['local']):.2f}), {n / best_local:.2f} jobs/s, "
        f"{ev / best_local:,.0f} simulated events/s"
    )
    for b in batches:
        t = times[f"ray-{b}"]
        best = min(t)
        per_job = (best - best_local) * args.cpus / n
        print(
            f"ray, {b} jobs per task: best {best:.2f} s (median {statistics.median(t):.2f}), "
            f"{n / best:.2f} jobs/s, {ev / best:,.0f} events/s; against local "
            f"{per_job * 1000:+.0f} ms per job ({per_job / (work / n) * 100:+.1f}% of a job)"
        )
    print("results identical to the local engine's in every run")
    cost = t_many * args.cpus / tasks
    print(
        f"ray, empty tasks: {tasks / t_many:,.0f} tasks/s over {args.cpus} CPUs, i.e. "
        f"{cost * 1000:.2f} ms of a CPU per task ({cost / (work / n) * 100:.2f}% of a "
        f"{work / n:.2f} s job); one at a time {t_one / 200 * 1000:.2f} ms a round trip"
    )


if __name__ == "__main__":
    main()
