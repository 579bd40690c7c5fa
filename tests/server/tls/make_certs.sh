#!/bin/sh
# Test certificates for tls_interop_test, made at test time (no private key is committed):
#   ca.pem                      the test CA (clients trust it)
#   default.pem / default.key   CN=tarry-default, SAN localhost and 127.0.0.1
#   renewed.pem / renewed.key   CN=tarry-renewed, the same names (a reload switches to it)
#   a.pem / a.key               CN=a.test (SAN a.test)
#   b.pem / b.key               CN=b.test (SAN b.test, *.b.test)
#   expired.pem / expired.key   CN=tarry-expired, valid in January 2020 only
#   other.key                   a key matching none of the certificates
#   garbage.key                 not PEM at all
# Usage: make_certs.sh DIR
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }

key ca.key
openssl req -x509 -new -key ca.key -out ca.pem -days 3650 -subj "/CN=tarry test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"

# leaf NAME CN SAN [ca options...]: NAME.key and NAME.pem, signed by the CA.
leaf() {
    name=$1 cn=$2 san=$3
    shift 3
    key "$name.key"
    openssl req -new -key "$name.key" -subj "/CN=$cn" -out "$name.csr"
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n' \
        "$san" > "$name.ext"
    if [ $# -eq 0 ]; then
        openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
            -days 825 -extfile "$name.ext" -out "$name.pem" 2>/dev/null
    else
        # An explicit validity window: openssl ca, which takes -startdate and -enddate.
        mkdir -p ca.db
        : > ca.db/index.txt
        [ -f ca.db/serial ] || echo 1000 > ca.db/serial
        cat > ca.cnf <<CNF
[ca]
default_ca = test
[test]
dir = ca.db
database = ca.db/index.txt
serial = ca.db/serial
new_certs_dir = ca.db
default_md = sha256
policy = any
copy_extensions = none
unique_subject = no
[any]
commonName = supplied
CNF
        openssl ca -batch -notext -config ca.cnf -cert ca.pem -keyfile ca.key -in "$name.csr" \
            -extfile "$name.ext" -out "$name.pem" "$@" 2>/dev/null
    fi
    rm -f "$name.csr" "$name.ext"
}

leaf default tarry-default "DNS:localhost,IP:127.0.0.1"
leaf renewed tarry-renewed "DNS:localhost,IP:127.0.0.1"
leaf a a.test "DNS:a.test"
leaf b b.test "DNS:b.test,DNS:*.b.test"
leaf expired tarry-expired "DNS:localhost,IP:127.0.0.1" -startdate 20200101000000Z -enddate 20200131000000Z
key other.key
printf 'this is not a key\n' > garbage.key
