#!/usr/bin/env bash
# provision-pit.sh [--rotate | --remove] NAME [SECRET_FILE]
#
# On the pit broker: create or update the MQTT account of a pit display (a
# supervisor's screen running `table-controller pit`). It may read every
# table's topics, casino/#, and write nothing. Prints the secret, or writes it
# to SECRET_FILE with mode 0600; --rotate and --remove as in
# provision-table.sh. Files: see provision-lib.sh.
set -euo pipefail

usage() {
    echo "usage: ${0##*/} [--rotate | --remove] NAME [SECRET_FILE]" >&2
    exit 2
}

rotate=0
remove=0
while [[ $# -gt 0 && $1 == -* ]]; do
    case $1 in
        --rotate) rotate=1 ;;
        --remove) remove=1 ;;
        -h | --help) usage ;;
        --) shift; break ;;
        *) usage ;;
    esac
    shift
done
[[ $# -ge 1 && $# -le 2 ]] || usage

# shellcheck source=SCRIPTDIR/provision-lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/provision-lib.sh"

name=$1
check_name "pit display name" "$name"

if [[ $remove -eq 1 ]]; then
    deprovision pit "$name"
else
    provision pit "$name" "$rotate" "${2:-}" "topic read casino/#"
fi
