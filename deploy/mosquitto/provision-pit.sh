#!/usr/bin/env bash
# provision-pit.sh [--rotate | --remove] SITE NAME [SECRET_FILE]
#
# On the pit broker: create or update the MQTT account of a pit display (a
# supervisor's screen running `table-controller pit`). It may read every
# topic of SITE and write nothing. The broker takes the username as the client
# id, so each window that runs at the same time needs an account of its own
# (deploy/README.md).
# Prints the secret, or writes it to SECRET_FILE with mode 0600; --rotate and
# --remove as in provision-table.sh. Files: see provision-lib.sh.
set -euo pipefail

readonly USAGE="SITE NAME [SECRET_FILE]"
# shellcheck source=SCRIPTDIR/provision-lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/provision-lib.sh"

site_account_main pit pit_rules "$@"
