"""Type stubs of tlblab._core, the Rust half of tlblab (crates/tlblab-py)."""

from collections.abc import Callable, Sequence
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
    without: Sequence[str] = (),
) -> str:
    """`tlblab sim study NAME --format json`'s text."""

def run_json(
    scenario: str,
    policies: Sequence[str] = ...,
    machine: str = "skylake",
    cpus: int = 4,
    seeds: int = 3,
    first_seed: int = 1,
    without: Sequence[str] = (),
    explain: bool = False,
    noise: float = 1.0,
    params: dict[str, int | str] = ...,
) -> str:
    """`tlblab sim run SCENARIO --format json`'s text."""

def check_json(
    scenario: str,
    policies: Sequence[str] = ...,
    machine: str = "skylake",
    cpus: int = 4,
    schedules: int = 1000,
    first_seed: int = 1,
    max_ipi_delay: int = 20000,
    disturb_every: int = 200000,
    speed_runs: int = 5,
    params: dict[str, int | str] = ...,
) -> str:
    """`tlblab sim check SCENARIO --format json`'s text."""

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

def execute_jobs(jobs: Sequence[str]) -> list[str]:
    """Each job (its JSON, from `Sweep.pending()`) run in this thread; the rows' JSON in order."""

class Sweep:
    """A sweep's plan and its results directory (`tlblab sweep SPEC -o DIR`), for an engine."""

    def __init__(
        self,
        spec: str | PathLike[str],
        out: str | PathLike[str] | None = None,
        resume: bool = False,
        force: bool = False,
    ) -> None:
        """Load and check the spec; open the results directory (default `sweep-NAME`)."""
    @property
    def out(self) -> PathLike[str]:
        """The results directory."""
    @property
    def name(self) -> str:
        """The spec's name."""
    def total(self) -> int:
        """The number of jobs in the sweep."""
    def done(self) -> int:
        """The number of jobs recorded so far (resumed ones included)."""
    def resumed(self) -> int:
        """The number of jobs found recorded when the directory was opened."""
    def pending(self) -> list[str]:
        """The jobs (JSON) with no row in the directory yet, in the sweep's order."""
    def record(self, row: str) -> bool:
        """Journal one row (JSON) at once; False when its job already has one (ignored)."""
    def run_local(self, progress: Callable[[int, int, int], object] | None = None) -> None:
        """Run the pending jobs on every core here; `progress(done, total, failed)` meanwhile."""
    def finish(self) -> str:
        """Write the results and the summary; the summary's JSON."""
