#!/usr/bin/env bash
# provision-recorder.sh [--rotate | --remove] SITE NAME [SECRET_FILE]
#
# On the broker the recorders use (the site's, or the central one behind a
# bridge): create or update the MQTT account of one recorder
# (`table-controller recorder`). It may read every topic of SITE and write only
# the ack and replay topics of SITE's tables. Recorders that share the load
# (one MQTT 5 shared subscription group) each have their own account: the
# username is the client id, and so the name of the recorder's durable session.
# Prints the secret, or writes it to SECRET_FILE with mode 0600; --rotate and
# --remove as in provision-table.sh. Files: see provision-lib.sh.
set -euo pipefail

readonly USAGE="SITE NAME [SECRET_FILE]"
# shellcheck source=SCRIPTDIR/provision-lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/provision-lib.sh"

site_account_main recorder recorder_rules "$@"
