#!/usr/bin/env bash
# provision-table.sh [--rotate | --remove] SITE TABLE_ID [SECRET_FILE]
#
# On the pit broker: create or update table TABLE_ID's MQTT account. Its
# username is the table id (MQTT.md) and it may write only under
# casino/SITE/table/TABLE_ID/# (pit-broker.acl says why the rule is spelled
# out per table). Prints the secret to put on the table PC, or writes it to
# SECRET_FILE with mode 0600. Run again with the same SECRET_FILE: nothing
# changes but the password hash's salt; --rotate makes a new secret; --remove
# takes the table off the broker. Files: see provision-lib.sh.
set -euo pipefail

usage() {
    echo "usage: ${0##*/} [--rotate | --remove] SITE TABLE_ID [SECRET_FILE]" >&2
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
[[ $# -ge 2 && $# -le 3 ]] || usage

# shellcheck source=SCRIPTDIR/provision-lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/provision-lib.sh"

site=$1
table_id=$2
check_name site "$site"
check_name "table id" "$table_id"

if [[ $remove -eq 1 ]]; then
    deprovision table "$table_id"
else
    provision table "$table_id" "$rotate" "${3:-}" "topic write casino/$site/table/$table_id/#"
fi
