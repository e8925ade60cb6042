#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo run for real, when they are missing:
# a Mosquitto broker, a PostgreSQL server, Chromium for the browser tests, socat for the
# rig's null-modem cables, openssl for the test CA and systemd-analyze for the unit checks.
# As root it uses apt-get, otherwise sudo; failing both it prints the command to run.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
have mosquitto || need+=(mosquitto)
have mosquitto_sub || need+=(mosquitto-clients)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
have chromium || need+=(chromium)
have socat || need+=(socat)
have openssl || need+=(openssl)
have systemd-analyze || need+=(systemd)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)

[ ${#need[@]} -eq 0 ] && exit 0
cmd=(apt-get install -y -qq --no-install-recommends "${need[@]}")
echo "installing missing system packages: ${need[*]}"
if [ "$(id -u)" -eq 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && "${cmd[@]}"
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive "${cmd[@]}"
else
    echo "missing system packages; run as root:" >&2
    echo "  apt-get update && ${cmd[*]}" >&2
    exit 1
fi
