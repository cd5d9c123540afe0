#!/usr/bin/env bash
# Installs the Debian packages lrpc needs, only those missing, so a second run costs
# a dpkg query and nothing more. Called by `make test` and `make bench`.
# Usage: install-deps.sh [bench]   ("bench" adds the peers only the benchmark builds)
set -euo pipefail

pkgs=(build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev lld
      capnproto libcapnp-dev liburing-dev libgtest-dev libgmock-dev
      libbenchmark-dev iproute2 nftables procps libssl-dev libsodium-dev)
if [ "${1:-}" = bench ]; then
  pkgs+=(libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler gnuplot-nox python3)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or install them) and try again" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
