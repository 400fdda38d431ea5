"""k/N, the time left and failures of a sweep on standard error (both engines)."""

from __future__ import annotations

import sys
import time


class Progress:
    """Prints ``tlblab: sweep NAME: k/N jobs, about T s left, F failed`` at most once a second."""

    def __init__(self, name: str, total: int, done: int) -> None:
        self.name = name
        self.total = total
        self.done = done
        self.failed = 0
        self.first = done
        self.start = time.monotonic()
        self.last = self.start

    def __call__(self, done: int, total: int, failed: int) -> None:
        """The engine's counts now (the local engine calls this about every half second)."""
        self.update(done, failed)

    def update(self, done: int, failed: int, final: bool = False) -> None:
        """Record the counts; print them if a second has passed (or at the end)."""
        changed = (done, failed) != (self.done, self.failed)
        self.done, self.failed = done, failed
        now = time.monotonic()
        if not final and (not changed or now - self.last < 1.0):
            return
        self.last = now
        ran, left = self.done - self.first, self.total - self.done - self.failed
        eta = f", about {(now - self.start) / ran * left:.0f} s left" if ran and left > 0 else ""
        failures = f", {self.failed} failed" if self.failed else ""
        print(
            f"tlblab: sweep {self.name}: {self.done}/{self.total} jobs{eta}{failures}",
            file=sys.stderr,
            flush=True,
        )
