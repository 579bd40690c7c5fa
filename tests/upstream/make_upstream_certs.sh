#!/bin/sh
# Certificates for the proxy's TLS tests (proxy_tls_test), made at test time (no private key is
# committed):
#   ca.pem / ca.key           the test CA (tarry's tls_ca_file; the application's client CA)
#   server.pem / server.key   the application's, signed by the CA: SAN localhost, 127.0.0.1
#   self.pem / self.key       the application's, self-signed: SAN localhost, 127.0.0.1
#   client.pem / client.key   tarry's client certificate (mTLS), signed by the CA
# Usage: make_upstream_certs.sh DIR
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }

key ca.key
openssl req -x509 -new -key ca.key -out ca.pem -days 30 -subj "/CN=tarry upstream test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"

# leaf NAME CN USAGE SAN: NAME.key and NAME.pem, signed by the CA.
leaf() {
    key "$1.key"
    openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\nsubjectAltName=%s\n' \
        "$3" "$4" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
        -extfile "$1.ext" -out "$1.pem" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
}

leaf server app.internal serverAuth "DNS:localhost,IP:127.0.0.1"
leaf client tarry-proxy clientAuth "DNS:tarry-proxy"
key self.key
openssl req -x509 -new -key self.key -out self.pem -days 30 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1"
