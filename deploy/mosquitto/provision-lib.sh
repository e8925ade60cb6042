# shellcheck shell=bash
# Shared by the provisioning scripts (provision-table.sh, provision-pit.sh,
# provision-recorder.sh, provision-bridge.sh; sourced, not run). It is the ACL
# generator: the rules of each role (docs/feed.md, "Who may do what on the broker")
# are written here and nowhere else.
#
# Each account is one line of the broker's password file (mosquitto_passwd)
# and one managed block of its ACL file:
#   # >>> KIND NAME
#   user NAME
#   topic ACCESS TOPIC
#   # <<< KIND NAME
# A name has at most one block; provisioning replaces it, never adds a second.
#
# Environment:
#   PIT_BROKER_PASSWD  password file   (default /etc/mosquitto/pit-broker.passwd)
#   PIT_BROKER_ACL     ACL file        (default /etc/mosquitto/pit-broker.acl;
#                      created from pit-broker.acl beside this script if missing)
#   PIT_BROKER_GROUP   group given read access to both when run as root
#                      (default mosquitto: the broker reads them after dropping
#                      to its own user; empty to leave the group alone)

readonly PROVISION_NAME_RE='^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'
readonly PROVISION_LOCK_WAIT_S=30

passwd_file=${PIT_BROKER_PASSWD:-/etc/mosquitto/pit-broker.passwd}
acl_file=${PIT_BROKER_ACL:-/etc/mosquitto/pit-broker.acl}
broker_group=${PIT_BROKER_GROUP-mosquitto}
provision_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

die() {
    echo "${0##*/}: $*" >&2
    exit 1
}

# A table's topics under casino/SITE/table/ID (docs/feed.md): the six it publishes,
# exact leaves, and the two a recorder writes for it to read.
readonly TABLE_LEAVES=(status state events rounds alerts stats)
readonly RECORDER_LEAVES=(ack replay)

# The rules of each role, one `topic ACCESS TOPIC` line each (mosquitto acl_file).
#   table     writes its own six leaves, nothing deeper and not the bare table
#             level; reads its own ack and replay, and its own status (a second
#             controller started as the same table sees the first's retained
#             status and yields: docs/feed.md "One controller per table").
#   pit       reads its site; writes nothing.
#   recorder  reads its site; writes only ack and replay of its site's tables.
#   bridge    a site broker's bridge on the central broker: writes the six leaves
#             of its site's tables, reads their ack and replay.
#   bridge-in on the site broker, the same bridge as the source of what it brings
#             down (mosquitto 2.0 gives those messages its remote_username): writes
#             the ack and replay of its site's tables. An ACL block with no password:
#             nobody can log in as it. Without it, check_retain_source withholds a
#             retained ack from every table that subscribes after it came down.
# A `+` in a topic line matches one whole level (any table id at the site).
table_rules() { # SITE TABLE_ID
    local base="casino/$1/table/$2" leaf
    for leaf in "${TABLE_LEAVES[@]}"; do
        if [[ $leaf == status ]]; then
            printf 'topic readwrite %s/%s\n' "$base" "$leaf"
        else
            printf 'topic write %s/%s\n' "$base" "$leaf"
        fi
    done
    for leaf in "${RECORDER_LEAVES[@]}"; do
        printf 'topic read %s/%s\n' "$base" "$leaf"
    done
}

pit_rules() { # SITE
    printf 'topic read casino/%s/#\n' "$1"
}

recorder_rules() { # SITE
    local leaf
    printf 'topic read casino/%s/#\n' "$1"
    for leaf in "${RECORDER_LEAVES[@]}"; do
        printf 'topic write casino/%s/table/+/%s\n' "$1" "$leaf"
    done
}

bridge_rules() { # SITE
    local leaf
    for leaf in "${TABLE_LEAVES[@]}"; do
        printf 'topic write casino/%s/table/+/%s\n' "$1" "$leaf"
    done
    for leaf in "${RECORDER_LEAVES[@]}"; do
        printf 'topic read casino/%s/table/+/%s\n' "$1" "$leaf"
    done
}

bridge_in_rules() { # SITE
    local leaf
    for leaf in "${RECORDER_LEAVES[@]}"; do
        printf 'topic write casino/%s/table/+/%s\n' "$1" "$leaf"
    done
}

# check_name WHAT VALUE: one whole topic level, as table_controller.service.config
# demands of a table id and a site: no '/', '+' or '#', which would let an
# account's rule reach into another's topics.
check_name() {
    [[ $2 =~ $PROVISION_NAME_RE ]] ||
        die "$1 '$2' must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
}

# The broker must be able to read what it is given, and nobody else.
protect() {
    chmod 0640 -- "$1"
    if [[ -n $broker_group && $EUID -eq 0 ]] && getent group "$broker_group" >/dev/null; then
        chgrp -- "$broker_group" "$1"
    fi
}

# Files are replaced whole (write beside, then rename), so the broker never
# reads half a file on a reload.
replace_file() { # TARGET: new content on stdin
    local tmp
    tmp=$(mktemp -- "$1.XXXXXX")
    cat >"$tmp"
    protect "$tmp"
    mv -f -- "$tmp" "$1"
}

# Serialise provisioning runs against the same broker files.
take_lock() {
    local dir
    dir=$(dirname -- "$acl_file")
    [[ -d $dir ]] || die "no directory $dir for the ACL file (set PIT_BROKER_ACL)"
    exec {provision_lock_fd}<"$dir"
    flock -w "$PROVISION_LOCK_WAIT_S" "$provision_lock_fd" ||
        die "another provisioning run holds $dir for more than ${PROVISION_LOCK_WAIT_S}s"
}

ensure_files() {
    command -v mosquitto_passwd >/dev/null ||
        die "mosquitto_passwd not found (apt-get install mosquitto)"
    if [[ ! -e $acl_file ]]; then
        replace_file "$acl_file" <"$provision_dir/pit-broker.acl"
    fi
    if [[ ! -e $passwd_file ]]; then
        : | replace_file "$passwd_file"
    fi
}

# account_kind NAME: the kind of NAME's managed block, or nothing.
account_kind() {
    awk -v n="$1" '$1 == "#" && $2 == ">>>" && $4 == n { print $3; exit }' "$acl_file"
}

# The ACL file without NAME's block.
acl_without() {
    awk -v n="$1" '
        $1 == "#" && $2 == ">>>" && $4 == n { skip = 1; next }
        $1 == "#" && $2 == "<<<" && $4 == n { skip = 0; next }
        !skip' "$acl_file"
}

new_secret() {
    # 32 random bytes, URL-safe base64: no ':' (the password file's separator),
    # no quotes or spaces to trip a config or shell.
    openssl rand -base64 32 | tr '+/' '-_' | tr -d '=\n'
}

write_secret() { # FILE SECRET
    local tmp
    tmp=$(mktemp -- "$1.XXXXXX")
    printf '%s' "$2" >"$tmp"
    chmod 0600 -- "$tmp"
    mv -f -- "$tmp" "$1"
}

# provision KIND NAME ROTATE SECRET_FILE RULES
#   Creates or updates NAME's password and its ACL block (RULES: the lines of
#   one of the *_rules functions above). The secret is kept
#   from SECRET_FILE when that file already holds one (unless ROTATE=1), so a
#   second run changes nothing that matters; else a new one is made. It goes
#   to SECRET_FILE (mode 0600) or, without one, to standard output.
provision() {
    local kind=$1 name=$2 rotate=$3 secret_file=$4 rules=$5
    local existing secret
    take_lock
    ensure_files
    existing=$(account_kind "$name")
    if [[ -n $existing && $existing != "$kind" ]]; then
        die "'$name' is already a $existing account on this broker; remove it first (${0##*/} --remove ...) or choose another name"
    fi
    if [[ -n $secret_file && -s $secret_file && $rotate -eq 0 ]]; then
        secret=$(<"$secret_file")
        [[ $secret != *$'\n'* && -n $secret ]] || die "$secret_file does not hold a one-line secret"
        echo "keeping the secret in $secret_file (--rotate for a new one)" >&2
    else
        secret=$(new_secret)
    fi

    # mosquitto_passwd reads the password twice from standard input; on the
    # command line (-b) it would show in the process list.
    printf '%s\n%s\n' "$secret" "$secret" | mosquitto_passwd "$passwd_file" "$name" >/dev/null ||
        die "mosquitto_passwd could not set the password of '$name' in $passwd_file"
    protect "$passwd_file"

    write_block "$kind" "$name" "$rules"

    if [[ -n $secret_file ]]; then
        write_secret "$secret_file" "$secret"
        echo "$kind '$name' provisioned; its secret is in $secret_file (mode 0600)" >&2
    else
        printf '%s\n' "$secret"
        echo "$kind '$name' provisioned; the line above is its secret" >&2
    fi
    echo "apply to a running broker: systemctl reload mosquitto" >&2
}

# write_block KIND NAME RULES: NAME's managed ACL block, replacing the one it had.
write_block() {
    {
        acl_without "$2"
        printf '# >>> %s %s\n' "$1" "$2"
        printf 'user %s\n' "$2"
        printf '%s\n' "$3"
        printf '# <<< %s %s\n' "$1" "$2"
    } | replace_file "$acl_file"
}

# has_password NAME: NAME is a line of the password file (a login).
has_password() {
    awk -F: -v n="$1" '$1 == n { found = 1 } END { exit !found }' "$passwd_file"
}

# rules_only KIND NAME RULES: NAME's ACL block and no password (one the broker
# checks messages against, never a login).
rules_only() {
    local kind=$1 name=$2 rules=$3 existing
    take_lock
    ensure_files
    existing=$(account_kind "$name")
    if [[ -n $existing && $existing != "$kind" ]]; then
        die "'$name' is already a $existing account on this broker; remove it first (${0##*/} --remove ...) or choose another name"
    fi
    if has_password "$name"; then
        die "'$name' has a password on this broker: it would be a login, not only rules"
    fi
    write_block "$kind" "$name" "$rules"
    echo "$kind '$name' rules written (no password); apply: systemctl reload mosquitto" >&2
}

# deprovision KIND NAME: drop NAME's password and ACL block.
deprovision() {
    local kind=$1 name=$2 existing
    take_lock
    ensure_files
    existing=$(account_kind "$name")
    if [[ -n $existing && $existing != "$kind" ]]; then
        die "'$name' is a $existing account, not a $kind one: nothing removed"
    fi
    if has_password "$name"; then
        mosquitto_passwd -D "$passwd_file" "$name" >/dev/null ||
            die "mosquitto_passwd could not remove '$name' from $passwd_file"
        protect "$passwd_file"
    fi
    acl_without "$name" | replace_file "$acl_file"
    echo "$kind '$name' removed; apply to a running broker: systemctl reload mosquitto" >&2
}

# usage: the calling script's USAGE line (set before sourcing this file).
usage() {
    echo "usage: ${0##*/} [--rotate | --remove] $USAGE" >&2
    exit 2
}

# parse_options "$@": sets rotate, remove and args (the words after the options).
parse_options() {
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
    args=("$@")
}

# site_account_main KIND RULES_FN [OPTIONS] SITE NAME [SECRET_FILE]: the whole of
# the pit, recorder and bridge scripts: one account per NAME, confined to SITE.
site_account_main() {
    local kind=$1 rules_fn=$2
    shift 2
    parse_options "$@"
    set -- "${args[@]+"${args[@]}"}"
    [[ $# -ge 2 && $# -le 3 ]] || usage
    local site=$1 name=$2 secret_file=${3:-}
    check_name site "$site"
    check_name "$kind name" "$name"
    if [[ $remove -eq 1 ]]; then
        deprovision "$kind" "$name"
    else
        provision "$kind" "$name" "$rotate" "$secret_file" "$("$rules_fn" "$site")"
    fi
}
