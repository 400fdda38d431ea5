#!/usr/bin/env bash
# The README's test command: cargo's tests, then the Python package's. The Python half makes a
# venv in .venv (python3 -m venv, Python 3.9 or newer), installs the pinned tools of
# python/requirements-dev.txt into it (maturin, ray, pandas, pyarrow, pytest, ruff), builds
# tlblab._core from this workspace into it (maturin develop: the dev profile, which optimises
# the simulating crates as the Rust tests do) and runs python/tests, whose Ray tests start a
# Ray head of their own on 127.0.0.1 and stop it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test --workspace"
cargo test --workspace --locked

echo "== the Python package (.venv)"
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  if ! "$python" -m venv .venv; then
    echo "test.sh: $python -m venv failed: install Python 3.9+ with venv (apt-get install python3-venv)" >&2
    exit 1
  fi
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r python/requirements-dev.txt
VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" .venv/bin/maturin develop --locked -q
.venv/bin/ruff format --check -q python scripts
.venv/bin/ruff check -q python scripts
# The tests compare the package with the CLI that cargo test built.
TLBLAB_BIN="$PWD/target/debug/tlblab" RAY_USAGE_STATS_ENABLED=0 \
  .venv/bin/python -m pytest -q python/tests
