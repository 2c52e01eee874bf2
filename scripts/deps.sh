#!/usr/bin/env bash
# Installs the Debian packages tailbound needs, as root or with sudo:
#   bash scripts/deps.sh build   what building needs (HiGHS is compiled from source)
#   bash scripts/deps.sh test    that, and what the tests run (namespaces, tc, memcached)
# Already installed packages are left alone; `apt-get update` runs once, and only when
# something is missing.
set -euo pipefail

# cmake and a C++ compiler build HiGHS (through the `highs` crate); libclang is bindgen's;
# python3 is what pyo3's build script asks about the Python ABI (crates/py).
build_packages=(cmake g++ make clang libclang-dev pkg-config python3)
# iproute2: network namespaces and tc; memcached: the real server of the testbed; chromium:
# the headless browser that checks the service's status page; python3-venv: the fresh virtual
# environment the Python package's wheel is installed into and tested in.
test_packages=(iproute2 memcached chromium python3-venv)

case "${1:-}" in
  build) wanted=("${build_packages[@]}") ;;
  test) wanted=("${build_packages[@]}" "${test_packages[@]}") ;;
  *)
    echo "usage: bash scripts/deps.sh build|test" >&2
    exit 2
    ;;
esac

missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo)
elif command -v sudo >/dev/null 2>&1 && [ -t 0 ]; then
  as_root=(sudo) # sudo will ask for the password
else
  echo "error: tailbound needs the Debian packages ${missing[*]}, and installing them needs root" >&2
  echo "or sudo. Run as root, or install them first: apt-get install -y ${missing[*]}" >&2
  exit 2
fi
echo "installing ${missing[*]}" >&2
# Another apt (unattended upgrades on a new machine) may hold apt's locks for a while: the
# install waits for dpkg's lock itself; `update` does not, so it is retried for up to 10 min.
for attempt in $(seq 1 120); do
  "${as_root[@]}" apt-get update && break
  if [ "$attempt" -eq 120 ]; then
    echo "error: apt-get update kept failing for 10 minutes (see above)" >&2
    exit 2
  fi
  sleep 5
done
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y "${missing[@]}"
