"""tlblab's study and replay from Python: the CLI's JSON byte for byte, its errors, DataFrames."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import tlblab
from conftest import FTRACE, cli


def test_study_json_is_the_clis_byte_for_byte(tlblab_bin: Path) -> None:
    want = cli(tlblab_bin, "sim", "study", "s2", "--quick", "--seeds", "2", "--format", "json")
    assert want.returncode == 0, want.stderr
    assert tlblab.study_json("s2", quick=True, seeds=2) == want.stdout


def test_study_frame_has_a_row_per_part_policy_and_measure() -> None:
    frame = tlblab.study("s2", quick=True, seeds=2, first_seed=3)
    import json

    report = json.loads(frame.attrs["json"])
    expected = sum(len(entry["measures"]) for part in report["parts"] for entry in part["policies"])
    assert len(frame) == expected > 0
    assert report["first_seed"] == 3
    baseline = frame[frame["baseline"]]
    assert baseline["ratio"].isna().all() and baseline["verdict"].isna().all()
    others = frame[~frame["baseline"]]
    # Every comparison has a verdict, or a note that says why it has none.
    assert (others["verdict"].notna() | others["note"].notna()).all()
    assert others["verdict"].notna().any()
    compared = others[others["ratio"].notna()]
    assert (compared["ci_low"] <= compared["ci_high"]).all()
    assert set(frame["n"]) == {2}


@pytest.mark.parametrize(
    "args",
    [
        ["-p", "linux-6.18,linux-4.13"],
        ["-p", "linux-6.18", "--ceiling", "1,33,512", "--refill", "working-set"],
    ],
)
def test_replay_json_is_the_clis_byte_for_byte(tlblab_bin: Path, args: list[str]) -> None:
    want = cli(tlblab_bin, "sim", "replay", "--json", FTRACE, *args)
    assert want.returncode == 0, want.stderr
    policies = args[1].split(",")
    ceiling = [int(c) for c in args[3].split(",")] if "--ceiling" in args else None
    refill = "working-set" if "--refill" in args else "flushed"
    got = tlblab.replay_json(FTRACE, policies=policies, ceiling=ceiling, refill=refill)
    assert got == want.stdout


def test_run_json_is_the_clis_byte_for_byte(tlblab_bin: Path) -> None:
    want = cli(
        tlblab_bin,
        *["sim", "run", "--scenario", "pingpong", "-p", "linux-4.13,linux-4.14", "--seeds", "2"],
        *["--iterations", "50", "--touch", "8", "--without", "mlp", "--format", "json"],
    )
    assert want.returncode == 0, want.stderr
    got = tlblab.run_json(
        "pingpong",
        policies=["linux-4.13", "linux-4.14"],
        seeds=2,
        without=["mlp"],
        iterations=50,
        touch=8,
    )
    assert got == want.stdout


def test_run_frame_has_a_row_per_policy_and_seed() -> None:
    frame = tlblab.run("pingpong", policies=["linux-4.13", "linux-4.14"], seeds=2, first_seed=5)
    assert list(zip(frame["policy"], frame["seed"])) == [
        ("linux-4.13", 5),
        ("linux-4.13", 6),
        ("linux-4.14", 5),
        ("linux-4.14", 6),
    ]
    assert frame["ratio"].isna().tolist() == [True, True, False, False]
    assert (frame["mean"] == frame.groupby("policy")["value"].transform("mean")).all()


@pytest.mark.parametrize("policies", [["linux-6.18"], ["linux-6.18", "bad-lazy-no-catch-up"]])
def test_check_json_is_the_clis_byte_for_byte(tlblab_bin: Path, policies: list[str]) -> None:
    want = cli(
        tlblab_bin,
        *["sim", "check", "--scenario", "pingpong", "-p", ",".join(policies), "--schedules", "20"],
        *["--iterations", "50", "--speed-runs", "2", "--format", "json"],
    )
    assert want.returncode in (0, 1), want.stderr
    got = tlblab.check_json(
        "pingpong", policies=policies, schedules=20, speed_runs=2, iterations=50
    )
    assert got == want.stdout
    frame = tlblab.check("pingpong", policies=policies, schedules=20, speed_runs=2, iterations=50)
    assert list(frame["policy"]) == policies
    assert (frame["schedules"] == 20).all()


def test_replay_frame_has_a_row_per_policy_and_per_ceiling() -> None:
    frame = tlblab.replay(FTRACE, policies=["linux-6.18", "linux-4.13"])
    assert list(frame["policy"]) == ["linux-6.18", "linux-4.13"]
    assert (frame["machine"] == "skylake").all()
    assert "cost.initiator_cycles" in frame.columns
    sweep = tlblab.replay(FTRACE, ceiling=[1, 33, 512])
    assert list(sweep["ceiling"]) == [1, 33, 512]


@pytest.mark.parametrize(
    ("call", "args"),
    [
        (lambda: tlblab.study("nope"), ["sim", "study", "nope"]),
        (
            lambda: tlblab.replay(FTRACE, policies=["no-such-policy"]),
            ["sim", "replay", FTRACE, "-p", "no-such-policy"],
        ),
        (
            lambda: tlblab.replay(FTRACE, machine="no-such-machine"),
            ["sim", "replay", FTRACE, "-m", "no-such-machine"],
        ),
        (
            lambda: tlblab.replay("/nonexistent/trace.flushtrace"),
            ["sim", "replay", "/nonexistent/trace.flushtrace"],
        ),
        (lambda: tlblab.run("no-such-scenario"), ["sim", "run", "--scenario", "no-such-scenario"]),
        (
            lambda: tlblab.run("pingpong", without=["no-such-mechanism"]),
            ["sim", "run", "--scenario", "pingpong", "--without", "no-such-mechanism"],
        ),
        (
            lambda: tlblab.run("pingpong", noise=150),
            ["sim", "run", "--scenario", "pingpong", "--noise", "150"],
        ),
        (
            lambda: tlblab.check("pingpong", policies=["no-such-policy"]),
            ["sim", "check", "--scenario", "pingpong", "-p", "no-such-policy"],
        ),
        (
            lambda: tlblab.study("s2", without=["no-such-mechanism"]),
            ["sim", "study", "s2", "--without", "no-such-mechanism"],
        ),
    ],
)
def test_errors_are_tlblab_errors_with_the_clis_message(
    tlblab_bin: Path, call: Callable[[], object], args: list[object]
) -> None:
    want = cli(tlblab_bin, *args)
    assert want.returncode != 0
    prefix = "tlblab: error: "
    line = next(x for x in want.stderr.splitlines() if x.startswith(prefix))
    with pytest.raises(tlblab.TlblabError) as caught:
        call()
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == line[len(prefix) :]


def test_the_gil_is_released_while_simulating() -> None:
    # Python code runs in another thread while a study simulates: ticks land inside its span.
    # Eight seeds keep the span well past half a second now that the dev build optimises the
    # study runner (two took 0.43 s here).
    span: list[float] = []

    def simulate() -> None:
        span.append(time.monotonic())
        tlblab.study_json("s2", quick=True, seeds=8)
        span.append(time.monotonic())

    worker = threading.Thread(target=simulate)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.monotonic())
        time.sleep(0.01)
    worker.join()
    start, end = span
    assert end - start > 0.5
    inside = [t for t in ticks if start + 0.1 < t < end - 0.1]
    assert len(inside) > 10, f"{len(inside)} ticks while simulating for {end - start:.2f} s"
