#!/usr/bin/env bash
# provision-bridge.sh [--rotate | --remove] SITE NAME [SECRET_FILE]
#
# On the central broker: create or update the account a site broker's bridge
# (site-bridge.conf) logs in with. It may write the six table topics of SITE's
# tables (as the tables do on the site broker) and read their ack and replay,
# which the bridge carries back to the site.
# Prints the secret, or writes it to SECRET_FILE with mode 0600; --rotate and
# --remove as in provision-table.sh. Files: see provision-lib.sh.
set -euo pipefail

readonly USAGE="SITE NAME [SECRET_FILE]"
# shellcheck source=SCRIPTDIR/provision-lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/provision-lib.sh"

site_account_main bridge bridge_rules "$@"
