#!/usr/bin/env bash
# Installs every Debian 12 package WombatKV's build, tests and benchmarks need. Idempotent: a
# second run installs nothing. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git ca-certificates
  librocksdb-dev libzstd-dev libxxhash-dev librust-blake3-dev libjemalloc-dev libabsl-dev
  libcurl4-openssl-dev libssl-dev libpugixml-dev liburing-dev
  nlohmann-json3-dev libcli11-dev libspdlog-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev
  redis-server curl python3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root (missing: ${missing[*]})" >&2; exit 1; }
  SUDO=sudo
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
