#!/usr/bin/env bash
# provision-table.sh [--rotate | --remove] SITE TABLE_ID [SECRET_FILE]
#
# On the pit broker: create or update table TABLE_ID's MQTT account. Its
# username is the table id and its client id (docs/feed.md); it may write only its
# six topics under casino/SITE/table/TABLE_ID (exact leaves: status, state,
# events, rounds, alerts, stats) and read only its own ack, replay and status
# (table_rules in provision-lib.sh; pit-broker.acl says why the rule is spelled
# out per table). Prints the secret to put on the table PC, or writes it to
# SECRET_FILE with mode 0600. Run again with the same SECRET_FILE: nothing
# changes but the password hash's salt; --rotate makes a new secret; --remove
# takes the table off the broker. Files: see provision-lib.sh.
set -euo pipefail

readonly USAGE="SITE TABLE_ID [SECRET_FILE]"
# shellcheck source=SCRIPTDIR/provision-lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/provision-lib.sh"

parse_options "$@"
set -- "${args[@]+"${args[@]}"}"
[[ $# -ge 2 && $# -le 3 ]] || usage

site=$1
table_id=$2
check_name site "$site"
check_name "table id" "$table_id"

if [[ $remove -eq 1 ]]; then
    deprovision table "$table_id"
else
    provision table "$table_id" "$rotate" "${3:-}" "$(table_rules "$site" "$table_id")"
fi
