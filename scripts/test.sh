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
