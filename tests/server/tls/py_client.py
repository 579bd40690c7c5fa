#!/usr/bin/env python3
"""Python's ssl module against tarry, for tls_interop_test. Prints one JSON object.

  py_client.py keepalive PORT CA N VERSION   N requests on one connection, then unwrap()
  py_client.py resume PORT CA VERSION [CMD]  a session from one connection resumed by the
                                             next; CMD (a shell command) runs between them
  py_client.py fresh PORT CA N VERSION       N connections one after the other, one request
                                             each, right behind the handshake
  py_client.py preconnect PORT CA VERSION ADMIN
                                             a connection that shakes hands and sends nothing,
                                             and one that sends no byte at all; once /metrics
                                             on ADMIN counts both waiting, each sends a request
VERSION is 1.2 or 1.3. The server is 127.0.0.1:PORT, verified as "localhost" against CA.
"""
import json
import socket
import ssl
import subprocess
import sys
import time
import urllib.request


def context(ca, version):
    ctx = ssl.create_default_context(cafile=ca)
    v = ssl.TLSVersion.TLSv1_3 if version == "1.3" else ssl.TLSVersion.TLSv1_2
    ctx.minimum_version = v
    ctx.maximum_version = v
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def read_response(tls, pending):
    """One Content-Length framed response: (status, body, rest of the bytes)."""
    while b"\r\n\r\n" not in pending:
        chunk = tls.recv(65536)
        if not chunk:
            raise EOFError("closed in the head")
        pending += chunk
    head, _, rest = pending.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = tls.recv(65536)
        if not chunk:
            raise EOFError("closed in the body")
        rest += chunk
    return status, rest[:length], rest[length:]


def connect(port, ctx, session=None):
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return ctx.wrap_socket(raw, server_hostname="localhost", session=session)


def keepalive(port, ca, n, version):
    ctx = context(ca, version)
    tls = connect(port, ctx)
    out = {"version": tls.version(), "alpn": tls.selected_alpn_protocol(), "ok": 0, "bad": []}
    pending = b""
    for i in range(n):
        tls.sendall(b"GET /req-%d HTTP/1.1\r\nHost: localhost\r\n\r\n" % i)
        status, body, pending = read_response(tls, pending)
        if status == 200 and body == b"Hello, World!":
            out["ok"] += 1
        else:
            out["bad"].append([i, status, body[:80].decode("latin-1")])
    # close_notify both ways: unwrap() sends ours and returns once the server's came.
    try:
        raw = tls.unwrap()
        out["unwrapped"] = True
    except (ssl.SSLError, OSError) as e:
        out["unwrapped"] = False
        out["unwrap_error"] = repr(e)
        raw = tls
    try:
        raw.settimeout(5)
        rest = raw.recv(1)
        out["eof"] = rest == b""  # then the TCP end, not a reset nor more bytes
    except OSError as e:
        out["eof"] = False
        out["eof_error"] = repr(e)
    raw.close()
    return out


def one_exchange(tls):
    tls.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    status, _, _ = read_response(tls, b"")
    return status


def resume(port, ca, version, between):
    ctx = context(ca, version)
    first = connect(port, ctx)
    out = {"first_status": one_exchange(first)}  # TLS 1.3: the ticket came before the answer
    session = first.session
    out["first_reused"] = first.session_reused
    out["has_ticket"] = session is not None and session.has_ticket
    first.close()
    if between:
        out["between_status"] = subprocess.run(between, shell=True).returncode
    second = connect(port, ctx, session=session)
    out["second_status"] = one_exchange(second)
    out["reused"] = second.session_reused
    out["version"] = second.version()
    second.close()
    return out


def fresh(port, ca, n, version):
    ctx = context(ca, version)
    out = {"ok": 0, "failed": 0, "errors": []}
    for i in range(n):
        try:
            tls = connect(port, ctx)
            tls.sendall(b"GET /fresh-%d HTTP/1.1\r\nHost: localhost\r\n\r\n" % i)
            status, body, _ = read_response(tls, b"")
            tls.close()
            if status == 200 and body == b"Hello, World!":
                out["ok"] += 1
                continue
            error = "status %d" % status
        except (ssl.SSLError, OSError, EOFError) as e:
            error = repr(e)
        out["failed"] += 1
        if len(out["errors"]) < 5:
            out["errors"].append([i, error])
    return out


def phases(admin):
    """The connections by phase, from the server's /metrics."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % admin, timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith('tarry_connections_by_phase{phase="'):
            name = line.split('"')[1]
            out[name] = int(float(line.rsplit(" ", 1)[1]))
    return out


def preconnect(port, ca, version, admin):
    """A browser's preconnected socket (the handshake done, no request yet) and a bare TCP
    connection (nothing sent): both wait until the server counts them (the first as silent, the
    second as handshaking), then each sends a request, the bare one its ClientHello first."""
    ctx = context(ca, version)
    bare = socket.create_connection(("127.0.0.1", port), timeout=10)
    tls = connect(port, ctx)
    out = {"version": tls.version(), "waiting": False}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        seen = phases(admin)
        if seen.get("silent", 0) >= 1 and seen.get("handshake", 0) >= 1:
            out["waiting"] = True
            break
        time.sleep(0.05)
    out["preconnected_status"] = one_exchange(tls)
    late = ctx.wrap_socket(bare, server_hostname="localhost")
    out["bare_version"] = late.version()
    out["bare_status"] = one_exchange(late)
    tls.close()
    late.close()
    return out


def main():
    mode = sys.argv[1]
    if mode == "keepalive":
        out = keepalive(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif mode == "resume":
        between = sys.argv[5] if len(sys.argv) > 5 else ""
        out = resume(int(sys.argv[2]), sys.argv[3], sys.argv[4], between)
    elif mode == "fresh":
        out = fresh(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5])
    elif mode == "preconnect":
        out = preconnect(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        raise SystemExit("unknown mode " + mode)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
