# Sourced by load/tls/idle_memory, load/tls/cpu_per_request and load/tls/handshakes: the build,
# the certificate, starting and stopping tarry and nginx (each one process, pinned to CPU 0), CPU
# readings, and the wait for a quiet machine. Not a command of its own.
# shellcheck shell=bash disable=SC2034  # variables used by the scripts that source this

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${TLS_BENCH_BUILD:-$REPO/build-bench}
NGINX=${NGINX:-/usr/sbin/nginx}
CLK_TCK=$(getconf CLK_TCK)
WORK=""
SERVER_PID=""
SERVER_KIND=""
CLIENT_PID=""

die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }
note() { echo "# $*" >&2; }

cleanup() {
    [ -n "$CLIENT_PID" ] && kill "$CLIENT_PID" 2>/dev/null && wait "$CLIENT_PID" 2>/dev/null
    stop_server
    [ -n "$WORK" ] && [ -z "${KEEP_WORK:-}" ] && rm -rf "$WORK"
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The tarry binary and tls_clients, built in Release into $BUILD (TLS_BENCH_BUILD) unless
# NO_BUILD is 1. With HEAD_ONLY 1, tarry is built from a clean export of HEAD (`git archive`, into
# /tmp/tarry-tls-bench-head-COMMIT, kept for the next run) rather than from the working tree, so
# that the figures belong to that commit whatever is being edited; tls_clients still comes from
# the working tree.
build_all() { # NO_BUILD HEAD_ONLY
    if [ "$1" != 1 ]; then
        note "building tarry and tls_clients in $BUILD (Release)"
        cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTARRY_TESTS=OFF \
            -DTARRY_EXAMPLES=OFF > "$WORK/cmake.log" 2>&1 || { cat "$WORK/cmake.log" >&2; die "cmake failed"; }
        cmake --build "$BUILD" -j2 --target tarry tls_clients > "$WORK/build.log" 2>&1 ||
            { tail -30 "$WORK/build.log" >&2; die "build failed"; }
    fi
    if [ "$2" = 1 ]; then
        local head dir
        head=$(git -C "$REPO" rev-parse --short HEAD)
        dir=/tmp/tarry-tls-bench-head-$head
        if [ ! -x "$dir/build/server/tarry" ]; then
            note "building tarry from a clean export of $head in $dir (Release)"
            rm -rf "$dir"; mkdir -p "$dir/src"
            git -C "$REPO" archive HEAD | tar -x -C "$dir/src"
            if ! cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DTARRY_TESTS=OFF \
                    -DTARRY_EXAMPLES=OFF -DTARRY_LOAD=OFF > "$WORK/build-head.log" 2>&1 ||
                ! cmake --build "$dir/build" -j2 --target tarry >> "$WORK/build-head.log" 2>&1; then
                tail -30 "$WORK/build-head.log" >&2; rm -rf "$dir"; die "build of $head failed"
            fi
        fi
        TARRY=$dir/build/server/tarry
        COMMIT="$head"
    fi
    TARRY=${TARRY:-$BUILD/server/tarry}
    CLIENTS=$BUILD/load/tls_clients
    [ -x "$TARRY" ] || die "no tarry at $TARRY"
    [ -x "$CLIENTS" ] || die "no tls_clients at $CLIENTS"
    [ -x "$NGINX" ] || die "no nginx at $NGINX (apt-get install nginx-light)"
}

# A self-signed RSA 2048 certificate for 127.0.0.1 and localhost, used by both servers.
make_cert() {
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 7 -subj /CN=localhost \
        -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
        -keyout "$WORK/key.pem" -out "$WORK/cert.pem" > /dev/null 2>&1 || die "openssl req failed"
    CERT=$WORK/cert.pem KEY=$WORK/key.pem
}

# Options every script takes; the rest go to OTHER_ARGS.
NO_BUILD=0 HEAD_ONLY=0
common_option() { # ARG -> 0 when it was one of --no-build, --head, --tarry BIN (then SHIFT set)
    SHIFT=1
    case "$1" in
        --no-build) NO_BUILD=1 ;;
        --head) HEAD_ONLY=1 ;;
        --tarry) TARRY=$2; SHIFT=2 ;;
        *) return 1 ;;
    esac
}
COMMON_HELP="  --no-build     use the binaries already in build-bench/ (TLS_BENCH_BUILD)
  --head         measure tarry built from a clean export of HEAD (not the working tree)
  --tarry BIN    measure this tarry binary"

setup() {
    WORK=$(mktemp -d /tmp/tarry-tls-bench.XXXXXX)
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    COMMIT=$(git -C "$REPO" rev-parse --short HEAD)
    git -C "$REPO" diff --quiet HEAD -- server tls http timeouts upstream CMakeLists.txt 2>/dev/null ||
        COMMIT="$COMMIT (with uncommitted changes)"
    [ -n "${TARRY:-}" ] && COMMIT="$COMMIT ($TARRY)"
    build_all "$NO_BUILD" "$HEAD_ONLY"
    make_cert
}

wait_port() { # PORT
    local i
    for (( i = 0; i < 100; i++ )); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# tarry, --workers 1, pinned to CPU 0: TLS on PORT, /metrics on PORT+1, plain HTTP on PORT+2.
# Idle connections are kept 300 s in every phase: after a request, after a handshake with no
# request (header timeout), and connected with nothing sent (handshake timeout).
start_tarry() { # PORT [EXTRA FLAGS...]
    local port=$1; shift
    taskset -c 0 "$TARRY" --workers 1 --tls-listen "127.0.0.1:$port" \
        --tls-certificate "$CERT" --tls-certificate-key "$KEY" \
        --listen "127.0.0.1:$((port + 2))" --admin-listen "127.0.0.1:$((port + 1))" \
        --keep-alive-timeout 300s --header-timeout 300s --handshake-timeout 300s \
        --max-requests 0 --log-level warn "$@" \
        >> "$WORK/tarry.log" 2>&1 &
    SERVER_PID=$! SERVER_KIND=tarry
    wait_port "$port" || die "tarry did not listen on $port (see $WORK/tarry.log)"
}

# nginx 1.22, one process (master_process off), pinned to CPU 0, load/tls/nginx.conf.in: TLS on
# PORT, plain HTTP on PORT+2.
start_nginx() { # PORT
    local port=$1 prefix=$WORK/nginx
    rm -rf "$prefix"; mkdir -p "$prefix"
    sed -e "s#@PREFIX@#$prefix#g" -e "s#@LISTEN@#127.0.0.1:$port#g" \
        -e "s#@PLAIN@#127.0.0.1:$((port + 2))#g" \
        -e "s#@CERT@#$CERT#g" -e "s#@KEY@#$KEY#g" \
        "$REPO/load/tls/nginx.conf.in" > "$prefix/nginx.conf"
    taskset -c 0 "$NGINX" -p "$prefix/" -e "$prefix/error.log" -c "$prefix/nginx.conf" \
        >> "$WORK/nginx.log" 2>&1 &
    SERVER_PID=$! SERVER_KIND=nginx
    wait_port "$port" || die "nginx did not listen on $port (see $prefix/error.log)"
}

start_server() { # KIND PORT
    case "$1" in
        tarry) start_tarry "$2" ;;
        nginx) start_nginx "$2" ;;
        *) die "unknown server $1" ;;
    esac
}

stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null
        local i
        for (( i = 0; i < 100; i++ )); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.05; done
        kill -0 "$SERVER_PID" 2>/dev/null && kill -KILL "$SERVER_PID" 2>/dev/null
    else
        note "$SERVER_KIND (pid $SERVER_PID) had already exited"
    fi
    wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=""
}

server_alive() { [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; }

# utime + stime of a process, in clock ticks.
cpu_ticks() { # PID
    awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

# Busy CPU time of the whole machine (/proc/stat: user, nice, system, irq, softirq), in ticks.
# Minus the server's and the client's own ticks over the same window, it is what other processes
# used: the scripts report it as "others" (% of one CPU) beside each measurement.
machine_ticks() {
    awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat
}

# Before a measurement, wait (up to QUIET_WAIT seconds, default 30) for a second in which the
# machine, server idle, is under 10% of one CPU busy; sets QUIET to the last reading (% of one CPU).
wait_for_quiet() {
    local waited=0 a b busy=0
    while [ "$waited" -lt "${QUIET_WAIT:-30}" ]; do
        a=$(machine_ticks); sleep 1; b=$(machine_ticks)
        busy=$(( (b - a) * 100 / CLK_TCK ))
        waited=$(( waited + 1 ))
        [ "$busy" -lt 10 ] && break
    done
    [ "$busy" -ge 10 ] && note "the machine is busy (${busy}% of a CPU used by others): measuring anyway"
    QUIET=$busy
}

# TLS connections on tarry's own record layer, from /metrics.
own_records() { # PORT_OF_ADMIN
    curl -s "http://127.0.0.1:$1/metrics" | awk '/^tarry_tls_own_record_connections / { print $2 }'
}

run_line() {
    local now
    now=$(date -u '+%Y-%m-%d %H:%M UTC')
    echo "**Run.** Command: \`$*\`. Commit: \`$COMMIT\`, Release. Date: $now. Machine: $(nproc) CPUs, $(uname -r);" \
        "nginx $("$NGINX" -v 2>&1 | sed 's#.*/##'), $(openssl version | cut -d' ' -f1-2);" \
        "certificate RSA 2048 (self-signed). Servers pinned to CPU 0, clients to CPU 1."
}

kv() { # LINE KEY -> the value of KEY=value in LINE
    tr ' ' '\n' <<< "$1" | awk -F= -v k="$2" '$1 == k { print substr($0, length(k) + 2); exit }'
}

# utime + stime of this script and of the children it has reaped (the clients), in ticks.
self_ticks() {
    awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$$/stat"
}

# 1234567 -> 1,234,567; 1234.5 -> 1,234.5; anything else unchanged.
fmt() {
    awk -v x="$1" 'BEGIN {
        if (x !~ /^-?[0-9]+(\.[0-9]+)?$/) { print x; exit }
        sign = ""; if (substr(x, 1, 1) == "-") { sign = "-"; x = substr(x, 2) }
        i = x; f = ""; p = index(x, "."); if (p) { i = substr(x, 1, p - 1); f = substr(x, p) }
        while (length(i) > 3) { f = "," substr(i, length(i) - 2) f; i = substr(i, 1, length(i) - 3) }
        print sign i f }'
}
