"""``python -m tlblab sweep SPEC [--engine local|ray] [--address A] [-o DIR] [--resume] [--force]``.

What ``tlblab sweep --engine ray`` runs, and says what it says: the summary on standard output
(``--format text|json``), progress and errors (``tlblab: error: …``) on standard error; exit
status 0, 1 for an error, 2 for bad usage, 128 + the signal when interrupted (130 for Ctrl-C,
143 for SIGTERM; the finished jobs are kept).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return its exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tlblab", description="tlblab's Python package from the command line."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    sweep = commands.add_parser("sweep", help="run a sweep spec (docs/sweep.md)")
    sweep.add_argument("spec", type=Path, metavar="SPEC.toml", help="the sweep spec")
    sweep.add_argument("--engine", choices=["local", "ray"], default="local")
    sweep.add_argument(
        "--address", metavar="HOST:PORT", help="the Ray cluster's head (or auto); none: Ray here"
    )
    sweep.add_argument("-o", "--output", type=Path, metavar="DIR", help="default: sweep-NAME")
    resume = sweep.add_mutually_exclusive_group()
    resume.add_argument("--resume", action="store_true", help="skip the finished jobs")
    resume.add_argument("--force", action="store_true", help="start over in DIR")
    sweep.add_argument("--format", choices=["text", "json"], default="text")
    sweep.add_argument(
        "--runtime-env",
        metavar="JSON",
        help='Ray runtime_env for the workers, e.g. {"py_modules": ["tlblab-….whl"]}',
    )
    sweep.add_argument("--batch", type=int, metavar="N", help="jobs per Ray task")
    args = parser.parse_args(argv)
    if args.address is not None and args.engine != "ray":
        parser.error("--address is for --engine ray")
    if args.batch is not None and args.batch < 1:
        parser.error("--batch: give at least 1")

    from . import TlblabError, _core
    from ._progress import Progress

    try:
        run = _core.Sweep(args.spec, args.output, args.resume, args.force)
        out = Path(run.out)
        if run.resumed():
            print(
                f"tlblab: resuming {out}: {run.resumed()} of {run.total()} jobs already recorded",
                file=sys.stderr,
            )
        try:
            if args.engine == "ray":
                from .ray_engine import drive

                runtime_env = json.loads(args.runtime_env) if args.runtime_env else None
                summary = drive(
                    run, address=args.address, runtime_env=runtime_env, batch=args.batch
                )
            else:
                shown = Progress(run.name, run.total(), run.done())
                run.run_local(shown)
                shown.update(run.done(), shown.failed, final=True)
                summary = run.finish()
        except KeyboardInterrupt as e:
            print(
                f"tlblab: {run.done()} of {run.total()} jobs are recorded in {out}; "
                f"`tlblab sweep {args.spec} -o {out} --resume` runs the rest",
                file=sys.stderr,
            )
            print(
                f"tlblab: error: the sweep was stopped; {run.done()} finished jobs are kept",
                file=sys.stderr,
            )
            # 128 + the signal, as the CLI: 130 for SIGINT, 143 for SIGTERM.
            return 128 + int(getattr(e, "signum", signal.SIGINT))
    except TlblabError as e:
        print(f"tlblab: error: {e}", file=sys.stderr)
        return 1
    if args.format == "json":
        sys.stdout.write(summary)
    else:
        sys.stdout.write((out / "summary.txt").read_text())
    print(
        f"tlblab: results in {out}/results.parquet and results.jsonl; "
        f"`tlblab report {out}` draws them",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
