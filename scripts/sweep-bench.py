"""Jobs/s of a sweep on this machine, the local engine against Ray, and Ray's cost per job.

Usage: .venv/bin/python scripts/sweep-bench.py [SPEC] [--cpus N] [--batch N ...]
(SPEC: default scripts/sweep-bench.toml, jobs of about a second.)

Runs every job of SPEC once alone (its cost), then the whole sweep with the local engine
(rayon over every core, in Rust) and on a Ray started in this process with the same CPUs
(after a warm-up task, so worker start-up is not counted), once per batch size asked for
(default: the engine's own choice, and one job per task). Ray's overhead per job is its extra
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
    parser.add_argument("--batch", type=int, action="append")
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

    def local() -> None:
        run = _core.Sweep(args.spec, tmp / "local")
        run.run_local()
        run.finish()

    t_local, _ = timed(local)
    ev = events(tmp / "local")
    rate = f", {ev / t_local:,.0f} simulated events/s" if ev else ""
    print(f"local: {t_local:.2f} s, {n / t_local:.2f} jobs/s{rate}")

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
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
    for batch in args.batch or [None, 1]:
        out = tmp / f"ray-{batch}"
        t_ray, _ = timed(ray_engine.run, args.spec, out, batch=batch, progress=False)
        same = (out / "results.jsonl").read_bytes() == (tmp / "local/results.jsonl").read_bytes()
        per_job = (t_ray - t_local) * args.cpus / n
        size = batch or ray_engine.batch_size(n, args.cpus)
        print(
            f"ray (batch {size}): {t_ray:.2f} s, {n / t_ray:.2f} jobs/s, "
            f"overhead {per_job * 1000:+.1f} ms/job ({per_job / (work / n) * 100:+.1f}% of a job), "
            f"results {'identical' if same else 'DIFFERENT'}"
        )
    ray.shutdown()


if __name__ == "__main__":
    main()
