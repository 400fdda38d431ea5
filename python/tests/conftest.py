"""What the tests share: the repository, the tlblab binary to compare with, a Ray head."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FTRACE = REPO / "crates/tlblab-flushtrace/tests/fixtures/text/ftrace-6.18-trace.txt"


@pytest.fixture(scope="session")
def tlblab_bin() -> Path:
    """The CLI built from this workspace: $TLBLAB_BIN, or target/debug/tlblab."""
    path = Path(os.environ.get("TLBLAB_BIN", REPO / "target/debug/tlblab"))
    if not path.is_file():
        pytest.fail(f"{path} is missing: build it first (cargo build), or set TLBLAB_BIN")
    return path


def cli(tlblab_bin: Path, *args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    """The CLI's output for `args`."""
    return subprocess.run(
        [str(tlblab_bin), *map(str, args)], check=False, capture_output=True, text=True, timeout=600
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray_bin() -> str:
    ray = Path(sys.executable).parent / "ray"
    return str(ray) if ray.exists() else "ray"


@pytest.fixture(scope="session")
def ray_head() -> Iterator[str]:
    """A Ray head on 127.0.0.1 (own port and temp dir, 2 CPUs, no dashboard); its address.

    Stopped at the end of the session, with its processes.
    """
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    port = _free_port()
    # Ray replaces 127.0.0.1 by the machine's outward address unless it believes it runs on a
    # one-node platform: the head, its workers and the drivers all stay on the loopback.
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    env = dict(os.environ)
    start = [
        _ray_bin(),
        "start",
        "--head",
        "--node-ip-address=127.0.0.1",
        f"--port={port}",
        "--include-dashboard=false",
        "--num-cpus=2",
        "--object-store-memory=100000000",
        f"--temp-dir={temp}",
        "--disable-usage-stats",
    ]
    subprocess.run(start, check=True, env=env, capture_output=True, timeout=180)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run(
            [_ray_bin(), "stop", "--force"], check=False, env=env, capture_output=True, timeout=120
        )
        shutil.rmtree(temp, ignore_errors=True)
