#!/usr/bin/env bash
# The README's test command: installs what building and the tests need from Debian's packages
# (as root or with sudo), then runs every test of the workspace. Tests read the production
# traces and reference outputs from ../shared beside the repository. Tests that need root
# (network namespaces, tc) run when this runs as root; otherwise they say "skipped", except
# under CI=true, where a skipped root test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test

if [ ! -d ../shared/traces/msr-production ]; then
  echo "error: ../shared/traces/msr-production is missing; the tests read the production traces from shared/ beside the repository" >&2
  exit 2
fi

cargo test --workspace --locked

# The Python package (crates/py): its wheel is built in the dev profile on the workspace's
# target (reusing what `cargo test` just compiled), installed into a fresh virtual environment
# of Debian's python3 with maturin, pytest and numpy from PyPI, and its pytest suite checks it
# against the `tailbound` binary `cargo test` built. A failing pytest fails this script.
venv="$(mktemp -d /tmp/tailbound-py.XXXXXX)"
trap 'rm -rf "$venv"' EXIT
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.5,<2" pytest numpy
"$venv/bin/maturin" build --profile dev --locked -m crates/py/Cargo.toml \
  --interpreter "$venv/bin/python" --out "$venv/wheels"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$venv"/wheels/tailbound-*.whl
TAILBOUND_BIN="$(realpath "${CARGO_TARGET_DIR:-target}")/debug/tailbound" "$venv/bin/python" -m pytest -q -p no:cacheprovider crates/py/tests
