"""``python -m tlblab sweep SPEC --engine ray|local [--address A] [-o DIR] [--resume] [--force]``.

What ``tlblab sweep --engine ray`` runs: the sweep, its summary table on standard output, errors
as ``tlblab: error: …`` on standard error with exit status 1 (2 for bad usage).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return its exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tlblab", description="tlblab's Python package from the command line."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    sweep = commands.add_parser("sweep", help="run a sweep spec (docs/sweep.md)")
    sweep.add_argument("spec", type=Path, metavar="SPEC", help="the sweep spec (TOML)")
    sweep.add_argument("--engine", choices=["local", "ray"], default="local")
    sweep.add_argument(
        "--address", metavar="ADDR", help="the Ray cluster's head (HOST:PORT or auto)"
    )
    sweep.add_argument("-o", "--output", type=Path, metavar="DIR", help="results directory")
    sweep.add_argument("--resume", action="store_true", help="skip finished jobs")
    sweep.add_argument("--force", action="store_true", help="start over in DIR")
    sweep.add_argument(
        "--runtime-env",
        metavar="JSON",
        help='Ray runtime_env for the workers, e.g. {"py_modules": ["tlblab.whl"]}',
    )
    sweep.add_argument("--batch", type=int, metavar="N", help="jobs per Ray task")
    args = parser.parse_args(argv)
    if args.address is not None and args.engine != "ray":
        parser.error("--address is for --engine ray")

    from . import TlblabError, _core

    out = args.output if args.output is not None else Path(f"sweep-{args.spec.stem}")
    try:
        if args.engine == "ray":
            from .ray_engine import run

            runtime_env = json.loads(args.runtime_env) if args.runtime_env else None
            summary = run(
                args.spec,
                out,
                address=args.address,
                resume=args.resume,
                force=args.force,
                runtime_env=runtime_env,
                batch=args.batch,
            )
        else:
            summary = _core.sweep_local(str(args.spec), str(out), args.resume, args.force)
    except TlblabError as e:
        print(f"tlblab: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("tlblab: interrupted: run again with --resume to go on", file=sys.stderr)
        return 130
    del summary
    sys.stdout.write((out / "summary.txt").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
