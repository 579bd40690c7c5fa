#!/bin/sh
# Runs h2spec (every case, then strict mode) against h2_conformance_server on 127.0.0.1.
#   run_h2spec.sh SERVER H2SPEC
set -eu
server=$1
h2spec=$2
dir=$(mktemp -d)
"$server" >"$dir/port" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
# The server prints its port once it listens.
tries=0
while [ ! -s "$dir/port" ]; do
    tries=$((tries + 1))
    [ $tries -le 600 ] || { echo "the server did not start" >&2; exit 1; }
    kill -0 $pid 2>/dev/null || { echo "the server exited" >&2; exit 1; }
    sleep 0.1
done
port=$(cat "$dir/port")
"$h2spec" -h 127.0.0.1 -p "$port" -o 5
"$h2spec" -h 127.0.0.1 -p "$port" -o 5 -S
