#!/usr/bin/env bash
# The test command of the README: installs what the tests need from Debian's packages, then
# runs every test of the workspace. Tests read the production traces and reference outputs
# from ../shared beside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests need (later issues add memcached, iproute2, cmake, sockperf).
packages=(iproute2 cmake clang libclang-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing ${missing[*]}" >&2
  apt-get update
  apt-get install -y "${missing[@]}"
fi

if [ ! -d ../shared/traces/msr-production ]; then
  echo "error: ../shared/traces/msr-production is missing; the tests read the production traces from shared/ beside the repository" >&2
  exit 2
fi

cargo test --workspace --locked
