#!/usr/bin/python3
"""HTTP/2 clients over Python's h2 (Debian's python3-h2) for tests/server/h2_sequences_test.cpp:
h2c with prior knowledge on 127.0.0.1. Each line is printed (and flushed) as it happens, so a
test reading them line by line can act between them.

  h2_sequences.py PORT storm PATH HELD  HELD GETs of PATH, and once every head came ("held
                                        HELD") each reset (CANCEL); then pairs of HEADERS and
                                        RST_STREAM, ten at a time and a PING behind them, until
                                        the server's GOAWAY: "goaway <code> <last>",
                                        "reset-streams <n>", then "eof" at the close
  h2_sequences.py PORT inflight PATH N  N GETs of PATH at once; "mid-response" once each has
                                        its head and a first DATA; then, as they come,
                                        "goaway <code> <last>", "ended <stream> <length>",
                                        "reset <stream> <code>", and "eof" at the close
  h2_sequences.py PORT settings         the server's SETTINGS, "setting <id> <value>" each,
                                        then "acked" once it acknowledged ours
  h2_sequences.py PORT idle N PATH      N connections, one GET of PATH answered on each, then
                                        "idle N"; then each connection's GOAWAYs and its close:
                                        "<i> goaway <code> <last> ... eof", one line each as it
                                        closes
"""
import select
import socket
import sys

import h2.config
import h2.connection
import h2.events


def say(*words):
    print(*words, flush=True)


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return sock, conn


def request_headers(path):
    return [(":method", "GET"), (":path", path), (":scheme", "http"),
            (":authority", "localhost"), ("user-agent", "h2_sequences.py")]


def receive(sock, conn):
    """The next events, the client's answers (ACKs, WINDOW_UPDATEs) sent; None at the close."""
    try:
        data = sock.recv(65536)
    except (ConnectionResetError, socket.timeout):
        data = b""
    if not data:
        return None
    events = conn.receive_data(data)
    for e in events:
        if isinstance(e, h2.events.DataReceived):
            conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
    flush(sock, conn)
    return events


def flush(sock, conn):
    out = conn.data_to_send()
    if out:
        try:
            sock.sendall(out)
        except OSError:
            pass


def storm(port, path, held):
    sock, conn = connect(port)
    ids = []
    for _ in range(held):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, request_headers(path), end_stream=True)
        ids.append(sid)
    flush(sock, conn)
    heads = set()
    while len(heads) < held:
        events = receive(sock, conn)
        if events is None:
            sys.exit("closed before the heads")
        heads.update(e.stream_id for e in events if isinstance(e, h2.events.ResponseReceived))
    say("held", held)
    for sid in ids:
        conn.reset_stream(sid, error_code=8)
    flush(sock, conn)
    # Rapid Reset: streams opened and reset at once, ten at a time, until the server has enough.
    resets = 0
    goaway = None
    while goaway is None:
        for _ in range(10):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, request_headers(path), end_stream=True)
            conn.reset_stream(sid, error_code=8)
            resets += 1
        conn.ping(b"stormpng")
        flush(sock, conn)
        acked = False
        while not acked and goaway is None:
            events = receive(sock, conn)
            if events is None:
                sys.exit("closed without a GOAWAY")
            for e in events:
                if isinstance(e, h2.events.PingAckReceived):
                    acked = True
                elif isinstance(e, h2.events.ConnectionTerminated):
                    goaway = e
    say("goaway", goaway.error_code, goaway.last_stream_id)
    say("reset-streams", resets)
    while receive(sock, conn) is not None:
        pass
    say("eof")


def frames(sock):
    """The server's frames as (type, flags, stream, payload) until it closes."""
    buf = b""
    while True:
        while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[0:3], "big"):
            length = int.from_bytes(buf[0:3], "big")
            stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            yield buf[3], buf[4], stream, buf[9:9 + length]
            buf = buf[9 + length:]
        try:
            data = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            data = b""
        if not data:
            return
        buf += data


DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0, 1, 3, 4, 6, 7
END_STREAM, ACK = 1, 1


def inflight(port, path, n):
    # The server's frames read raw: python3-h2 refuses the PING that follows a graceful GOAWAY
    # (RFC 9113 6.8), which a client must answer.
    sock, conn = connect(port)
    ids = []
    for _ in range(n):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, request_headers(path), end_stream=True)
        ids.append(sid)
    flush(sock, conn)
    length = {sid: 0 for sid in ids}
    started = False
    for kind, flags, stream, payload in frames(sock):
        try:
            if kind == SETTINGS and not flags & ACK:
                sock.sendall(bytes([0, 0, 0, SETTINGS, ACK, 0, 0, 0, 0]))
            elif kind == PING and not flags & ACK:
                sock.sendall(bytes([0, 0, 8, PING, ACK, 0, 0, 0, 0]) + payload)
        except OSError:
            pass
        if kind == DATA and stream in length:
            length[stream] += len(payload)
            if flags & END_STREAM:
                say("ended", stream, length[stream])
        elif kind == RST_STREAM:
            say("reset", stream, int.from_bytes(payload[0:4], "big"))
        elif kind == GOAWAY:
            say("goaway", int.from_bytes(payload[4:8], "big"),
                int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF)
        if not started and all(v > 0 for v in length.values()):
            started = True
            say("mid-response")
    say("eof")


def settings(port):
    sock, conn = connect(port)
    acked = False
    seen = False
    while not (acked and seen):
        events = receive(sock, conn)
        if events is None:
            sys.exit("closed")
        for e in events:
            if isinstance(e, h2.events.RemoteSettingsChanged):
                for code, setting in sorted(e.changed_settings.items()):
                    say("setting", int(code), setting.new_value)
                seen = True
            elif isinstance(e, h2.events.SettingsAcknowledged):
                acked = True
    say("acked")


def idle(port, n, path):
    conns = [connect(port) for _ in range(n)]
    for sock, conn in conns:
        conn.send_headers(1, request_headers(path), end_stream=True)
        flush(sock, conn)
    for sock, conn in conns:
        ended = False
        while not ended:
            events = receive(sock, conn)
            if events is None:
                sys.exit("closed before the answer")
            ended = any(isinstance(e, h2.events.StreamEnded) for e in events)
    say("idle", n)
    seen = {i: [] for i in range(n)}
    open_ = {conns[i][0]: i for i in range(n)}
    while open_:
        ready, _, _ = select.select(list(open_), [], [], 60)
        if not ready:
            sys.exit("no close within 60 s: %s" % seen)
        for sock in ready:
            i = open_[sock]
            events = receive(sock, conns[i][1])
            if events is None:
                say(i, *seen[i], "eof")
                del open_[sock]
                continue
            for e in events:
                if isinstance(e, h2.events.ConnectionTerminated):
                    seen[i] += ["goaway", e.error_code, e.last_stream_id]


def main():
    port, mode = int(sys.argv[1]), sys.argv[2]
    if mode == "storm":
        storm(port, sys.argv[3], int(sys.argv[4]))
    elif mode == "inflight":
        inflight(port, sys.argv[3], int(sys.argv[4]))
    elif mode == "settings":
        settings(port)
    elif mode == "idle":
        idle(port, int(sys.argv[3]), sys.argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
