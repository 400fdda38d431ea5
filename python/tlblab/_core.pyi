"""Type stubs of tlblab._core, the Rust half of tlblab (crates/tlblab-py)."""

from collections.abc import Sequence
from os import PathLike

class TlblabError(ValueError):
    """An error from tlblab, with the text the command line prints after `tlblab: error:`."""

def version() -> str:
    """The version of tlblab this module was built from."""

def study_json(
    name: str,
    quick: bool = False,
    seeds: int | None = None,
    first_seed: int = 1,
    noise: float = 1.0,
    explain: bool = False,
) -> str:
    """`tlblab sim study NAME --format json`'s text."""

def replay_json(
    trace: str | PathLike[str],
    policies: Sequence[str] = ...,
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
    """`tlblab sim replay TRACE --format json`'s text."""

def sweep_local(spec: str, out: str, resume: bool = False, force: bool = False) -> str:
    """Run a sweep spec on every core of this machine into `out`; the summary's JSON."""

def execute_jobs(jobs: Sequence[str]) -> list[str]:
    """Each job (its JSON) run in this thread; the rows' JSON, in the jobs' order."""

class Sweep:
    """A sweep's plan and its results directory, for an engine that runs the jobs elsewhere."""

    def __init__(self, spec: str, out: str, resume: bool = False, force: bool = False) -> None: ...
    def total(self) -> int:
        """The number of jobs in the sweep."""
    def pending(self) -> list[str]:
        """The jobs (JSON) with no row in the directory yet, in the sweep's order."""
    def record(self, row: str) -> bool:
        """Journal one row (JSON) at once; False when its job already has one (ignored)."""
    def finish(self) -> str:
        """Write the results and summary files; the summary's JSON."""
