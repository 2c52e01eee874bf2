"""Fixtures of the Python suite: the repository, the shared traces and the `tailbound` CLI
whose `--json` the bindings must reproduce.

The CLI is the binary named by $TAILBOUND_BIN (scripts/test.sh passes the one `cargo test`
built in the same run); without it, target/release/tailbound, then target/debug/tailbound.
"""

import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared"
TRACES = SHARED / "traces" / "msr-production"
EXAMPLES = REPO / "crates" / "scenario" / "examples"


def _cli_path():
    given = os.environ.get("TAILBOUND_BIN")
    if given:
        return pathlib.Path(given)
    for profile in ("release", "debug"):
        candidate = REPO / "target" / profile / "tailbound"
        if candidate.exists():
            return candidate
    return None


@pytest.fixture(scope="session")
def traces():
    if not TRACES.is_dir():
        pytest.fail(f"{TRACES} is missing: the tests read the production traces from shared/ beside the repository")
    return TRACES


class Cli:
    """Runs `tailbound ARGS --json` and returns (exit code, parsed stdout or None, stderr)."""

    def __init__(self, path):
        self.path = path

    def json(self, *args):
        out = subprocess.run(
            [str(self.path), *map(str, args), "--json"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        parsed = json.loads(out.stdout) if out.returncode in (0, 1) else None
        return out.returncode, parsed, out.stderr


@pytest.fixture(scope="session")
def cli():
    path = _cli_path()
    if path is None or not path.exists():
        pytest.fail("no tailbound binary: build it (cargo build -p tailbound-cli) or set TAILBOUND_BIN")
    return Cli(path)
