#!/usr/bin/env bash
# make-test-ca.sh OUTDIR [HOSTNAME|IP ...]
#
# A throw-away certificate authority for rigs and tests of the pit broker's TLS
# listener, in OUTDIR:
#
#   ca.pem, ca.key                  the test CA (kept if OUTDIR already has one)
#   server.pem, server.key          the broker's certificate, for every HOSTNAME/IP
#                                   given plus localhost and 127.0.0.1
#   wrong-host.pem, wrong-host.key  signed by the same CA for wrong-host.invalid
#                                   only: a client that checks host names must
#                                   refuse a broker presenting it
#
# Production brokers get their certificate from the site's own CA; this one is
# for test rigs and the deploy tests. Running it again keeps the CA and issues
# the two broker certificates afresh, so tables that trust ca.pem keep working.
set -euo pipefail

usage() {
    echo "usage: ${0##*/} OUTDIR [HOSTNAME|IP ...]" >&2
    exit 2
}

[[ $# -ge 1 ]] || usage
outdir=$1
shift

readonly CA_DAYS=3650
readonly LEAF_DAYS=825        # the longest server certificate validity some TLS clients accept
readonly WRONG_HOST=wrong-host.invalid

command -v openssl >/dev/null || { echo "${0##*/}: openssl not found (apt-get install openssl)" >&2; exit 1; }

umask 077
mkdir -p -- "$outdir"
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

# Run openssl, showing its chatter only when it fails.
quietly() {
    local log=$work/openssl.log
    "$@" 2>"$log" || { cat -- "$log" >&2; return 1; }
}

# The subjectAltName list: every name once; IPv4/IPv6 literals as IP entries.
san_for() {
    local -A seen=()
    local out="" name kind
    for name in "$@"; do
        [[ -n $name && -z ${seen[$name]:-} ]] || continue
        seen[$name]=1
        if [[ $name =~ ^[0-9]+(\.[0-9]+){3}$ || $name == *:* ]]; then
            kind=IP
        else
            kind=DNS
        fi
        out+="${out:+,}${kind}:${name}"
    done
    printf '%s' "$out"
}

# EC P-256 keys: quick to make, and accepted by mosquitto, Python's ssl and paho.
new_key() {
    quietly openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"
    chmod 0600 "$1"
}

if [[ ! -s $outdir/ca.key || ! -s $outdir/ca.pem ]]; then
    new_key "$outdir/ca.key"
    quietly openssl req -x509 -new -key "$outdir/ca.key" -sha256 -days "$CA_DAYS" \
        -subj "/O=Casino War test rig/CN=Casino War test CA" \
        -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -addext "subjectKeyIdentifier=hash" \
        -out "$outdir/ca.pem"
fi

# issue NAME CN SAN: a server certificate signed by the CA.
issue() {
    local name=$1 cn=$2 san=$3
    local ext=$work/$name.ext csr=$work/$name.csr
    printf '%s\n' \
        "basicConstraints=critical,CA:FALSE" \
        "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=serverAuth" \
        "subjectKeyIdentifier=hash" \
        "authorityKeyIdentifier=keyid,issuer" \
        "subjectAltName=$san" >"$ext"
    new_key "$outdir/$name.key"
    quietly openssl req -new -key "$outdir/$name.key" -subj "/O=Casino War test rig/CN=$cn" \
        -out "$csr"
    quietly openssl x509 -req -in "$csr" -sha256 -days "$LEAF_DAYS" \
        -CA "$outdir/ca.pem" -CAkey "$outdir/ca.key" -CAcreateserial -CAserial "$outdir/ca.srl" \
        -extfile "$ext" -out "$outdir/$name.pem"
}

issue server "${1:-localhost}" "$(san_for "$@" localhost 127.0.0.1)"
issue wrong-host "$WRONG_HOST" "DNS:$WRONG_HOST"

# Certificates are public; the CA certificate goes to every table PC.
chmod 0644 "$outdir/ca.pem" "$outdir/server.pem" "$outdir/wrong-host.pem"
echo "test CA and broker certificates in $outdir (server: $(san_for "$@" localhost 127.0.0.1))" >&2
