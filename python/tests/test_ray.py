"""The Ray engine on a Ray head of the test's own: the same rows as the local engine, a killed
worker's jobs recorded once, errors before any job runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tlblab
from conftest import cli
from tlblab.ray_engine import MAX_BATCH, batch_size

# A small, fast sweep (docs/sweep.md): 8 jobs of a quick scenario.
SMALL = """\
name = "ray-small"
seeds = 2
baseline = { policy = "linux-6.18" }

[[sweep]]
machine = "skylake"
scenario = "storm"
policy = ["linux-6.18", "linux-4.13"]
cpus = [4, 8]
iterations = 20
"""

# The same with jobs of about a second: long enough for a worker to be caught running one.
SLOW = SMALL.replace("ray-small", "ray-slow").replace("iterations = 20", "iterations = 600")


def write_spec(tmp_path: Path, text: str) -> Path:
    spec = tmp_path / "spec.toml"
    spec.write_text(text)
    return spec


def rows(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_batches_keep_tasks_few_but_every_cpu_busy() -> None:
    assert batch_size(0, 2) == 1
    assert batch_size(7, 2) == 1
    assert batch_size(80, 2) == 10
    assert batch_size(10**6, 2) == MAX_BATCH
    assert batch_size(100, 0) == 25


def test_a_sweep_on_ray_equals_the_local_engine_row_for_row(ray_head: str, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, SMALL)
    local = tlblab.sweep(spec, out=tmp_path / "local")
    on_ray = tlblab.sweep(spec, engine="ray", address=ray_head, out=tmp_path / "ray")
    want = (tmp_path / "local/results.jsonl").read_bytes()
    assert (tmp_path / "ray/results.jsonl").read_bytes() == want
    assert len(local) == 8
    assert local.equals(on_ray)


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sweeps"


@pytest.mark.parametrize("name", ["ceiling.toml", "s5-core-quick.toml"])
def test_the_example_sweeps_on_ray_equal_the_local_engine(
    ray_head: str, tmp_path: Path, name: str
) -> None:
    """The README's ceiling sweep and the S5-style core sweep (CPUs zipped with make -jN, three
    policies): the same results and summary, byte for byte, from both engines."""
    spec = EXAMPLES / name
    local = tlblab.sweep(spec, out=tmp_path / "local", progress=False)
    on_ray = tlblab.sweep(
        spec, engine="ray", address=ray_head, out=tmp_path / "ray", progress=False
    )
    for file in ["results.jsonl", "results.parquet", "summary.json", "summary.txt"]:
        assert (tmp_path / "ray" / file).read_bytes() == (tmp_path / "local" / file).read_bytes(), (
            file
        )
    assert local.equals(on_ray)
    assert len(local) == {"ceiling.toml": 45, "s5-core-quick.toml": 18}[name]


def _batch_workers() -> list[int]:
    """Ray workers running a batch of the sweep now (Ray names the process after its task)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(b"ray::_run_batch"):
            found.append(int(pid))
    return found


def test_a_killed_workers_jobs_are_rerun_and_recorded_once(ray_head: str, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, SLOW)
    out = tmp_path / "ray"
    driver = subprocess.Popen(
        [sys.executable, "-m", "tlblab", "sweep", str(spec), "--engine", "ray"]
        + ["--address", ray_head, "-o", str(out), "--batch", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and driver.poll() is None and time.monotonic() < deadline:
        # A worker seen running a batch twice, 0.2 s apart: well inside a job, not at its end.
        seen = set(_batch_workers())
        time.sleep(0.2)
        running = [pid for pid in _batch_workers() if pid in seen]
        if running:
            killed = running[0]
            os.kill(killed, signal.SIGKILL)
    _, stderr = driver.communicate(timeout=600)
    assert killed is not None, f"no worker was seen running a batch\n{stderr}"
    assert driver.returncode == 0, stderr
    got = rows(out)
    hashes = [r["hash"] for r in got]
    assert len(hashes) == len(set(hashes)) == 8
    journal = [json.loads(x) for x in (out / "journal.jsonl").read_text().splitlines()]
    assert sorted(r["hash"] for r in journal) == sorted(hashes)
    local = tmp_path / "local"
    tlblab.sweep(spec, out=local, progress=False)
    assert (out / "results.jsonl").read_bytes() == (local / "results.jsonl").read_bytes()


def test_a_bad_spec_is_refused_before_ray_starts(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path, SMALL.replace("iterations = 20\n", "iterations = 20\nbogus = [1, 2]\n")
    )
    import ray

    with pytest.raises(tlblab.TlblabError) as caught:
        tlblab.sweep(spec, engine="ray", out=tmp_path / "out")
    assert not ray.is_initialized()
    message = str(caught.value)
    assert message.startswith(f"sweep spec {spec}: line 11, `[[sweep]] bogus`: unknown axis")
    assert not (tmp_path / "out/results.jsonl").exists()


def test_without_ray_the_engine_says_how_to_install_it(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, SMALL)
    # `ray` made unimportable in a fresh interpreter.
    code = (
        "import sys; sys.modules['ray'] = None; from tlblab.__main__ import main; "
        f"sys.exit(main(['sweep', {str(spec)!r}, '--engine', 'ray', '-o', {str(tmp_path / 'o')!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1
    assert done.stderr.startswith("tlblab: error: the Ray engine needs Ray in this Python")
    assert "pip install" in done.stderr


def _wait_for_rows(journal: Path, rows: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) >= rows:
            return
        time.sleep(0.05)
    raise AssertionError(f"{journal} did not reach {rows} rows")


def test_resume_after_sigint_runs_only_the_rest(ray_head: str, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, SLOW)
    out = tmp_path / "ray"
    command = [sys.executable, "-m", "tlblab", "sweep", str(spec), "--engine", "ray"]
    command += ["--address", ray_head, "-o", str(out), "--batch", "1"]
    driver = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_rows(out / "journal.jsonl", 2, driver)
    driver.send_signal(signal.SIGINT)
    _, stderr = driver.communicate(timeout=120)
    assert driver.returncode == 130, stderr
    assert "--resume` runs the rest" in stderr
    kept = (out / "journal.jsonl").read_text().splitlines()
    assert 2 <= len(kept) < 8
    assert not (out / "results.jsonl").exists()

    again = subprocess.run(
        [*command, "--resume"], capture_output=True, text=True, timeout=600, check=False
    )
    assert again.returncode == 0, again.stderr
    assert f"{len(kept)} of 8 jobs already recorded" in again.stderr
    assert f"{8 - len(kept)} of 8 jobs to run on Ray" in again.stderr
    journal = (out / "journal.jsonl").read_text().splitlines()
    assert journal[: len(kept)] == kept and len(journal) == 8
    local = tmp_path / "local"
    tlblab.sweep(spec, out=local, progress=False)
    assert (out / "results.jsonl").read_bytes() == (local / "results.jsonl").read_bytes()


def test_the_cli_runs_the_ray_engine_through_the_package(
    tlblab_bin: Path, ray_head: str, tmp_path: Path
) -> None:
    spec = write_spec(tmp_path, SMALL)
    local = cli(tlblab_bin, "sweep", spec, "-o", tmp_path / "local")
    assert local.returncode == 0, local.stderr
    env = dict(os.environ, TLBLAB_PYTHON=sys.executable)
    on_ray = subprocess.run(
        [str(tlblab_bin), "sweep", str(spec), "--engine", "ray", "--address", ray_head]
        + ["-o", str(tmp_path / "ray")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert on_ray.returncode == 0, on_ray.stderr
    assert on_ray.stdout == local.stdout
    want = (tmp_path / "local/results.jsonl").read_bytes()
    assert (tmp_path / "ray/results.jsonl").read_bytes() == want
