#!/usr/bin/python3
"""WebSockets over HTTP/2 (RFC 8441) with Python's h2 (Debian's python3-h2) for
h2_websocket_test: h2c with prior knowledge on 127.0.0.1 (or TLS with ALPN h2: --tls), each
WebSocket an extended CONNECT (:method CONNECT, :protocol websocket), its frames written here
(masked, as a client's must be: RFC 6455 5.3) into the stream's DATA.

  h2_websocket_client.py PORT [--tls] echo PATH      a WebSocket: prints its status and the
      response fields it should not carry, 20 text messages and a binary one echoed, then the
      close handshake and END_STREAM both ways: "closed"
  ... big SIZE PATH        one binary message of SIZE bytes echoed: "big SIZE ok"
  ... idle PATH            one message echoed, then quiet until the stream ends: "reset <code>"
                           or "ended", then "quiet <ms>" (how long it stayed quiet)
  ... reset PATH APP_PORT  one message echoed, then RST_STREAM(CANCEL); waits (polling the
                           application's /stats) until its WebSocket is closed: "upstream
                           closed"; then a GET on the same connection: "<status>"
  ... raw PATH PROTOCOL    :protocol PROTOCOL (no WebSocket framing): sends "hello" and
                           END_STREAM, prints the bytes that come back and "ended" at the
                           server's END_STREAM
  ... first PATH           :protocol tarry-raw on an application that half-closes at once:
                           prints what came and "ended" at its END_STREAM, then sends "more"
                           and END_STREAM on the half-open stream: "sent"
  ... many N PATH GET_PATH N WebSockets at once on one connection, each echoing its own
                           messages, beside N GETs of GET_PATH: "<n> websockets ok" and each
                           GET's "<status> <body>"
  ... status PATH [PROTOCOL]  an extended CONNECT (:protocol websocket unless PROTOCOL): its
                           status and body: "<status> <body>"
  ... connect AUTHORITY    a plain CONNECT (RFC 9113 8.5: :method and :authority alone, no
                           END_STREAM): "<status> <body>" or "reset <code>"; then a GET / on
                           the same connection: "<status>"
  ... settings             the server's SETTINGS_ENABLE_CONNECT_PROTOCOL: "enable_connect <n>"
  ... dead PATH            a WebSocket, one message echoed, then a dead peer: the socket is read
                           but nothing is answered (no PING's ACK) until the server closes:
                           "ping" if it sent one, "goaway <code>", "eof", "quiet <ms>"
  ... live PATH N          a quiet WebSocket whose connection answers PINGs: once N came,
                           a message echoed: "pings N", "echoed"
"""
import json
import os
import select
import socket
import ssl
import struct
import sys
import time
import urllib.request

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings

TIMEOUT = 30


def connect(port, tls):
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
        sock = ctx.wrap_socket(sock, server_hostname="localhost")
        if sock.selected_alpn_protocol() != "h2":
            sys.exit("ALPN did not choose h2")
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return sock, conn


def ws_frame(opcode, payload):
    """A client's frame: FIN, masked."""
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    mask = os.urandom(4)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) if n < 4096 else \
        (int.from_bytes(payload, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big")
         ).to_bytes(n, "big")
    return head + mask + body


def ws_parse(buf):
    """One whole server frame off the front of buf: (opcode, payload, rest) or None."""
    if len(buf) < 2:
        return None
    opcode = buf[0] & 0x0F
    n = buf[1] & 0x7F
    at = 2
    if n == 126:
        if len(buf) < 4:
            return None
        n = struct.unpack("!H", buf[2:4])[0]
        at = 4
    elif n == 127:
        if len(buf) < 10:
            return None
        n = struct.unpack("!Q", buf[2:10])[0]
        at = 10
    if len(buf) < at + n:
        return None
    return opcode, bytes(buf[at:at + n]), buf[at + n:]


class client:
    def __init__(self, port, tls):
        self.sock, self.conn = connect(port, tls)
        self.scheme = "https" if tls else "http"
        self.status = {}
        self.fields = {}
        self.data = {}
        self.ended = set()
        self.reset = {}
        self.outgoing = {}  # bytes waiting for window, per stream
        self.end_after = set()
        self.remote_settings = None

    def open(self, path, protocol="websocket", extra=()):
        sid = self.conn.get_next_available_stream_id()
        headers = [(":method", "CONNECT"), (":protocol", protocol), (":scheme", self.scheme),
                   (":path", path), (":authority", "localhost")]
        if protocol == "websocket":
            headers += [("sec-websocket-version", "13")]
        self.conn.send_headers(sid, headers + list(extra))
        self.flush()
        return sid

    def get(self, path):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", "GET"), (":path", path), (":scheme", self.scheme),
                                     (":authority", "localhost")], end_stream=True)
        self.flush()
        return sid

    def send(self, sid, data, end=False):
        self.outgoing[sid] = self.outgoing.get(sid, b"") + data
        if end:
            self.end_after.add(sid)
        self.push()

    def push(self):
        for sid in list(self.outgoing):
            data = self.outgoing[sid]
            while data:
                room = min(self.conn.local_flow_control_window(sid),
                           self.conn.max_outbound_frame_size)
                if room <= 0:
                    break
                self.conn.send_data(sid, data[:room])
                data = data[room:]
            self.outgoing[sid] = data
            if not data:
                del self.outgoing[sid]
                if sid in self.end_after:
                    self.end_after.discard(sid)
                    self.conn.end_stream(sid)
        self.flush()

    def flush(self):
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def turn(self, timeout=TIMEOUT):
        """Reads once (up to `timeout`); False at the connection's end."""
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return True
        try:
            got = self.sock.recv(1 << 20)
        except (ConnectionResetError, ssl.SSLError):
            return False
        if not got:
            return False
        for e in self.conn.receive_data(got):
            if isinstance(e, h2.events.ResponseReceived):
                h = {k.decode(): v.decode() for k, v in e.headers}
                self.status[e.stream_id] = h[":status"]
                self.fields[e.stream_id] = h
            elif isinstance(e, h2.events.DataReceived):
                self.data.setdefault(e.stream_id, bytearray()).extend(e.data)
                self.conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            elif isinstance(e, h2.events.StreamEnded):
                self.ended.add(e.stream_id)
            elif isinstance(e, h2.events.StreamReset):
                self.reset[e.stream_id] = e.error_code
            elif isinstance(e, h2.events.RemoteSettingsChanged):
                self.remote_settings = e.changed_settings
        self.push()
        return True

    def until(self, condition, what):
        deadline = time.monotonic() + TIMEOUT
        while not condition():
            if time.monotonic() > deadline:
                sys.exit("timed out waiting for " + what)
            if not self.turn(1):
                if condition():
                    return
                sys.exit("connection closed waiting for " + what)

    def opened(self, sid):
        self.until(lambda: sid in self.status or sid in self.reset, "the answer")
        return self.status.get(sid)

    def message(self, sid):
        """The next whole WebSocket message on sid (no fragmentation from ws for these)."""
        result = []

        def one():
            parsed = ws_parse(self.data.get(sid, bytearray()))
            if parsed is None:
                return False
            opcode, payload, rest = parsed
            self.data[sid] = bytearray(rest)
            result.append((opcode, payload))
            return True

        self.until(lambda: one() or sid in self.reset or sid in self.ended, "a message")
        if not result:
            sys.exit("the stream ended before a message")
        return result[0]


def echo(c, path):
    sid = c.open(path)
    status = c.opened(sid)
    print(status)
    h = c.fields.get(sid, {})
    print("fields:", " ".join(k for k in ("sec-websocket-accept", "upgrade", "connection",
                                          "content-length") if k in h) or "none")
    for i in range(20):
        text = ("hello %d" % i).encode()
        c.send(sid, ws_frame(1, text))
        op, got = c.message(sid)
        if op != 1 or got != text:
            sys.exit("echo %d: %r" % (i, got))
    binary = bytes((i * 7) & 0xFF for i in range(1000))
    c.send(sid, ws_frame(2, binary))
    op, got = c.message(sid)
    if op != 2 or got != binary:
        sys.exit("binary echo")
    print("echoed")
    c.send(sid, ws_frame(8, struct.pack("!H", 1000)))
    op, got = c.message(sid)
    if op != 8:
        sys.exit("no close frame back")
    c.send(sid, b"", end=True)
    c.until(lambda: sid in c.ended or sid in c.reset, "the stream's end")
    print("closed" if sid in c.ended else "reset %d" % c.reset[sid])


def big(c, size, path):
    sid = c.open(path)
    if c.opened(sid) != "200":
        sys.exit("status " + str(c.status.get(sid)))
    payload = os.urandom(size)
    c.send(sid, ws_frame(2, payload))
    op, got = c.message(sid)
    print("big %d %s" % (size, "ok" if got == payload else "differs (%d)" % len(got)))


def idle(c, path):
    sid = c.open(path)
    if c.opened(sid) != "200":
        sys.exit("status " + str(c.status.get(sid)))
    # From before our last frame: the tunnel's quiet starts with the last byte through it (the
    # echo), so what we measure is never shorter than what the server waited.
    quiet = time.monotonic()
    c.send(sid, ws_frame(1, b"one"))
    c.message(sid)
    c.until(lambda: sid in c.reset or sid in c.ended, "the stream's end")
    took = int((time.monotonic() - quiet) * 1000)
    if sid in c.reset:
        print("reset %s" % h2.errors.ErrorCodes(c.reset[sid]).name)
    else:
        print("ended")
    print("quiet %d" % took)


def app_open(app_port):
    with urllib.request.urlopen("http://127.0.0.1:%d/stats" % app_port, timeout=5) as r:
        return json.load(r)["open"]


def reset(c, path, app_port):
    sid = c.open(path)
    if c.opened(sid) != "200":
        sys.exit("status " + str(c.status.get(sid)))
    c.send(sid, ws_frame(1, b"one"))
    c.message(sid)
    if app_open(app_port) < 1:
        sys.exit("the application has no WebSocket open")
    c.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
    c.flush()
    deadline = time.monotonic() + TIMEOUT
    while app_open(app_port) != 0:
        if time.monotonic() > deadline:
            sys.exit("the upstream WebSocket stayed open")
        c.turn(0.02)
    print("upstream closed")
    g = c.get("/plain")
    c.until(lambda: g in c.ended, "the GET")
    print(c.status[g])


def raw(c, path, protocol):
    sid = c.open(path, protocol)
    print(c.opened(sid))
    c.send(sid, b"hello", end=True)
    c.until(lambda: sid in c.ended or sid in c.reset, "the stream's end")
    print(bytes(c.data.get(sid, b"")).decode())
    print("ended" if sid in c.ended else "reset %d" % c.reset[sid])


def first(c, path):
    sid = c.open(path, "tarry-raw")
    print(c.opened(sid))
    c.until(lambda: sid in c.ended or sid in c.reset, "the stream's end")
    print(bytes(c.data.get(sid, b"")).decode())
    print("ended" if sid in c.ended else "reset %d" % c.reset[sid])
    if sid in c.reset:
        return
    c.send(sid, b"more", end=True)
    print("sent")


def many(c, n, path, get_path):
    ids = [c.open(path) for _ in range(n)]
    gets = [c.get(get_path) for _ in range(n)]
    for sid in ids:
        if c.opened(sid) != "200":
            sys.exit("status " + str(c.status.get(sid)))
    for round_ in range(5):
        for sid in ids:
            c.send(sid, ws_frame(1, ("ws %d round %d" % (sid, round_)).encode()))
        for sid in ids:
            op, got = c.message(sid)
            if got != ("ws %d round %d" % (sid, round_)).encode():
                sys.exit("stream %d got %r" % (sid, got))
    c.until(lambda: all(g in c.ended for g in gets), "the GETs")
    print("%d websockets ok" % n)
    for g in gets:
        print(c.status[g], bytes(c.data.get(g, b"")).decode())


def status(c, path, protocol="websocket"):
    sid = c.open(path, protocol)
    c.until(lambda: sid in c.ended or sid in c.reset, "the answer's end")
    if sid in c.reset:
        print("reset %s" % h2.errors.ErrorCodes(c.reset[sid]).name)
        return
    print(c.status[sid], bytes(c.data.get(sid, b"")).decode().strip())


def plain_connect(c, authority):
    c.conn.config.validate_outbound_headers = False  # h2 wants a :path on every request
    sid = c.conn.get_next_available_stream_id()
    c.conn.send_headers(sid, [(":method", "CONNECT"), (":authority", authority)])
    c.flush()
    c.conn.config.validate_outbound_headers = True
    c.until(lambda: sid in c.ended or sid in c.reset, "the answer's end")
    if sid in c.status:
        print(c.status[sid], bytes(c.data.get(sid, b"")).decode().strip())
    else:
        print("reset %s" % h2.errors.ErrorCodes(c.reset[sid]).name)
    nxt = c.get("/")
    c.until(lambda: nxt in c.ended or nxt in c.reset, "the GET's end")
    print(c.status.get(nxt, "reset"))


def settings(c):
    c.until(lambda: c.remote_settings is not None, "the server's SETTINGS")
    print("enable_connect %d" % c.conn.remote_settings.enable_connect_protocol)


def dead(c, path):
    sid = c.open(path)
    if c.opened(sid) != "200":
        sys.exit("status " + str(c.status.get(sid)))
    # From before our last frame: the server's quiet starts at its read of it (or of what we
    # send after it), so what we measure is never shorter than what the server waited.
    quiet = time.monotonic()
    c.send(sid, ws_frame(1, b"one"))
    c.message(sid)
    raw = bytearray()
    deadline = quiet + TIMEOUT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([c.sock], [], [], 1)
        if not ready:
            continue
        got = c.sock.recv(1 << 16)
        if not got:
            break
        raw.extend(got)
    else:
        sys.exit("the server never closed")
    took = int((time.monotonic() - quiet) * 1000)
    events = c.conn.receive_data(bytes(raw))
    if any(isinstance(e, h2.events.PingReceived) for e in events):
        print("ping")
    for e in events:
        if isinstance(e, h2.events.ConnectionTerminated):
            print("goaway %d" % e.error_code)
    print("eof")
    print("quiet %d" % took)


def live(c, path, n):
    sid = c.open(path)
    if c.opened(sid) != "200":
        sys.exit("status " + str(c.status.get(sid)))
    pings = [0]
    deadline = time.monotonic() + TIMEOUT
    while pings[0] < n:
        if time.monotonic() > deadline:
            sys.exit("only %d pings" % pings[0])
        ready, _, _ = select.select([c.sock], [], [], 1)
        if not ready:
            continue
        got = c.sock.recv(1 << 16)
        if not got:
            sys.exit("closed after %d pings" % pings[0])
        for e in c.conn.receive_data(got):
            if isinstance(e, h2.events.PingReceived):
                pings[0] += 1
            elif isinstance(e, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                sys.exit("ended after %d pings" % pings[0])
        c.flush()  # the ACKs
    print("pings %d" % n)
    c.send(sid, ws_frame(1, b"still here"))
    op, got = c.message(sid)
    print("echoed" if got == b"still here" else "got %r" % got)


def main():
    args = sys.argv[1:]
    port = int(args.pop(0))
    tls = False
    if args and args[0] == "--tls":
        tls = True
        args.pop(0)
    mode = args.pop(0)
    c = client(port, tls)
    if mode == "echo":
        echo(c, args[0])
    elif mode == "big":
        big(c, int(args[0]), args[1])
    elif mode == "idle":
        idle(c, args[0])
    elif mode == "reset":
        reset(c, args[0], int(args[1]))
    elif mode == "raw":
        raw(c, args[0], args[1])
    elif mode == "first":
        first(c, args[0])
    elif mode == "many":
        many(c, int(args[0]), args[1], args[2])
    elif mode == "status":
        status(c, *args[:2])
    elif mode == "connect":
        plain_connect(c, args[0])
    elif mode == "settings":
        settings(c)
    elif mode == "dead":
        dead(c, args[0])
    elif mode == "live":
        live(c, args[0], int(args[1]))
    else:
        sys.exit("unknown mode " + mode)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
