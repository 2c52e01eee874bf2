#!/usr/bin/env bash
# The README's main job on a fresh Debian machine with Rust: installs what building needs,
# builds tailbound and runs its demo (the whole pipeline on a bundled synthetic tenant set).
# Arguments go to `tailbound demo` (e.g. --json, --svg FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh build
cargo run --release --locked -p tailbound-cli -- demo "$@"
