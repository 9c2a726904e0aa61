#!/usr/bin/env bash
# Installs the peers `ebb-bench peers` compares ebb with: Redis (keys with
# EXPIRE, active expiry) and PostgreSQL (a timestamp-indexed table and a
# batched DELETE job), both from Debian. The harness starts its own servers
# on loopback ports with temporary data directories; the services the
# packages may register are neither needed nor started here.
# Usage: benches/install-peers.sh   (as root, or with sudo)
set -euo pipefail
sudo=""
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# policy-rc.d exit 101: the packages' scripts must not start system services.
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d
    trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo apt-get install -y -qq redis-server postgresql >/dev/null
command -v redis-server
ls -d /usr/lib/postgresql/*/bin/postgres
