#!/usr/bin/env bash
# provision-bridge.sh [--rotate | --remove] SITE NAME [SECRET_FILE]
# provision-bridge.sh --site-side [--remove] SITE NAME
#
# On the central broker: create or update the account a site broker's bridge
# (site-bridge.conf) logs in with. It may write the six table topics of SITE's
# tables (as the tables do on the site broker) and read their ack and replay,
# which the bridge carries back to the site.
# Prints the secret, or writes it to SECRET_FILE with mode 0600; --rotate and
# --remove as in provision-table.sh. Files: see provision-lib.sh.
#
# --site-side, on the site broker, with the same NAME (the bridge's
# remote_username): the rules the ack and replay the bridge brings down are held
# to there, and no password. Without them the site broker (check_retain_source
# true) keeps a retained ack from every table that subscribes after it came down.
set -euo pipefail

readonly USAGE="SITE NAME [SECRET_FILE]   or: --site-side [--remove] SITE NAME"
# shellcheck source=SCRIPTDIR/provision-lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/provision-lib.sh"

if [[ ${1:-} == --site-side ]]; then
    shift
    parse_options "$@"
    set -- "${args[@]+"${args[@]}"}"
    [[ $# -eq 2 && $rotate -eq 0 ]] || usage
    check_name site "$1"
    check_name "bridge name" "$2"
    if [[ $remove -eq 1 ]]; then
        deprovision bridge-in "$2"
    else
        rules_only bridge-in "$2" "$(bridge_in_rules "$1")"
    fi
else
    site_account_main bridge bridge_rules "$@"
fi
