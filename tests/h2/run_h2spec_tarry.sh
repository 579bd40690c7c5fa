#!/bin/sh
# Runs h2spec (every case, then strict mode) against the tarry binary with http2 on, on
# loopback: h2c with prior knowledge on a plain listener, or with `tls` h2 by ALPN on a TLS
# listener (a self-signed certificate made here; h2spec -t -k).
#   run_h2spec_tarry.sh TARRY H2SPEC [tls]
set -eu
tarry=$1
h2spec=$2
mode=${3:-plain}
dir=$(mktemp -d)
# The kernel picks the ports (port 0), read back from the start-up log: a port picked here and
# bound later may be taken by another process in between. Over TLS the plain listener that
# goes beside it (else the default, 8080) is on another loopback address, so both can be 0.
host=127.0.0.1
if [ "$mode" = tls ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
        -subj /CN=localhost -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
    host=127.0.0.2
    set -- --listen "127.0.0.1:0" --tls-listen "$host:0" \
        --tls-certificate "$dir/cert.pem" --tls-certificate-key "$dir/key.pem"
    scheme=https
    tls_flags="-t -k"
else
    set -- --listen "$host:0"
    scheme=http
    tls_flags=""
fi
"$tarry" --workers 1 --log-level info "$@" >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
tries=0
port=
until [ -n "$port" ] && curl -sk -o /dev/null "$scheme://$host:$port/"; do
    tries=$((tries + 1))
    [ $tries -le 600 ] || { echo "tarry did not start" >&2; cat "$dir/log" >&2; exit 1; }
    kill -0 $pid 2>/dev/null || { echo "tarry exited" >&2; cat "$dir/log" >&2; exit 1; }
    sleep 0.1
    port=$(sed -n "s/.*listening on $host:\([0-9]*\).*/\1/p" "$dir/log" | head -n 1)
done
# A plain listener speaks HTTP/1.1 too: h2spec 3.5/2's "invalid connection preface"
# (INVALID CONNECTION PREFACE) is an HTTP/1.1 request line to it, answered 400 as HTTP/1.1
# answers, which h2spec reads as a broken frame. That case alone may fail there; over TLS,
# where ALPN chose h2, every case must pass.
run() { # h2spec's arguments
    # shellcheck disable=SC2086 # the TLS flags are two words or none
    if "$h2spec" -h "$host" -p "$port" $tls_flags -o 5 "$@" >"$dir/out" 2>&1; then
        tail -n 1 "$dir/out"
        return 0
    fi
    cat "$dir/out"
    failed=$(sed -n '/^Failures:/,/^Finished/p' "$dir/out" | grep -c '×' || true)
    [ "$mode" = plain ] && [ "$failed" -eq 1 ] &&
        sed -n '/^Failures:/,/^Finished/p' "$dir/out" | grep -q '× 2: Sends invalid connection preface'
}
run
run -S
