#!/usr/bin/python3
"""An HTTP/2 client over Python's h2 (Debian's python3-h2) for the h2c tests: prior knowledge,
plain TCP on 127.0.0.1, optionally TLS with ALPN h2 (--tls).

  h2_client.py PORT streams N PATH   N GETs at once on one connection: prints "<status> <length>"
                                      per stream, in stream order
  h2_client.py PORT post SIZE PATH   one POST of SIZE bytes, sent as the windows allow:
                                      prints "<status> <body>"
  h2_client.py PORT reset PATH       a GET reset (CANCEL) once its head came: prints "reset"
  h2_client.py PORT idle PATH        one GET, then idle until the server's GOAWAY and close:
                                      prints "goaway <error code> <last stream>" then "eof"
  h2_client.py PORT partial          half the client preface, then nothing: prints "eof" when
                                      the server closes
  h2_client.py PORT slow-body PATH   a GET of PATH keeps the connection busy while a POST's
                                      body stops after its first bytes: prints the POST's status
                                      and "ended" or "reset <code>", then a next GET's status
  h2_client.py PORT slow-headers PATH  a GET of PATH keeps the connection busy while a second
                                      request's HEADERS stops half way: prints "goaway <code>",
                                      then "eof"
  h2_client.py PORT zero-window PATH  stream windows of 0, a GET of PATH: prints "reset <code>"
                                      when the server gives up on the stream, then "ping" when
                                      the connection still answers one
  h2_client.py PORT no-ack           the preface and SETTINGS, never acknowledging the server's:
                                      prints "goaway <code>" then "eof"
  h2_client.py PORT mute PATH        a GET; from the server's first GOAWAY on nothing more is
                                      sent (its PING unanswered): prints "goaway <code> <last>"
                                      for each, the body's length and "ended", then "eof"
  h2_client.py PORT get PATH         as mute, answering SETTINGS and PINGs to the end
  h2_client.py PORT settled-get PATH  as get, the request sent once the server's SETTINGS is
                                     acknowledged (nothing of ours unread once it has answered)
  h2_client.py PORT pings            no request, a PING every 20 ms until the server's GOAWAY:
                                      prints "goaway <code> <last>" for each, then "eof"
  h2_client.py PORT dead PATH        a GET of PATH, then deaf to the server's PINGs (SETTINGS
                                      still acknowledged): prints "ping" at the first, then
                                      "goaway <code>" and "eof"
  h2_client.py PORT goaway PATH      a GET of PATH answered, then the client's GOAWAY(NO_ERROR):
                                      prints the body's length and "ended", then "eof"
  h2_client.py PORT close PATH       a GET of PATH answered, then the client's FIN: prints the
                                      body's length and "ended"
  h2_client.py PORT frame HEX        the preface and SETTINGS, then the frame HEX: prints
                                      "goaway <code>" then "eof"
  h2_client.py PORT ping-flood       PINGs, each once the last one's ACK came (none left unread
                                      at the close), until the server's GOAWAY: prints
                                      "goaway <code>" then "eof"
"""
import select
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.settings


def connect(port, tls):
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
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


SCHEME = "http"


def request_headers(method, path, extra=()):
    return [(":method", method), (":path", path), (":scheme", SCHEME),
            (":authority", "localhost"), ("user-agent", "h2_client.py")] + list(extra)


class responses:
    def __init__(self):
        self.status = {}
        self.body = {}
        self.ended = set()
        self.reset = set()

    def take(self, conn, events):
        for e in events:
            if isinstance(e, h2.events.ResponseReceived):
                self.status[e.stream_id] = dict(e.headers)[b":status"].decode()
            elif isinstance(e, h2.events.DataReceived):
                self.body.setdefault(e.stream_id, bytearray()).extend(e.data)
                conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            elif isinstance(e, h2.events.StreamEnded):
                self.ended.add(e.stream_id)
            elif isinstance(e, h2.events.StreamReset):
                self.reset.add(e.stream_id)
            elif isinstance(e, h2.events.ConnectionTerminated):
                if e.error_code != 0:
                    sys.exit("GOAWAY: %s" % e)


def pump(sock, conn, r):
    data = sock.recv(65536)
    if not data:
        sys.exit("the server closed the connection")
    r.take(conn, conn.receive_data(data))
    out = conn.data_to_send()
    if out:
        sock.sendall(out)


def streams(port, n, path, tls):
    sock, conn = connect(port, tls)
    ids = []
    for _ in range(n):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, request_headers("GET", path), end_stream=True)
        ids.append(sid)
    sock.sendall(conn.data_to_send())
    r = responses()
    while not all(i in r.ended or i in r.reset for i in ids):
        pump(sock, conn, r)
    for i in ids:
        print(r.status.get(i, "reset"), len(r.body.get(i, b"")))


def post(port, size, path, tls):
    sock, conn = connect(port, tls)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, request_headers("POST", path, [("content-length", str(size))]))
    sock.sendall(conn.data_to_send())
    r = responses()
    left = size
    while left > 0:
        room = min(conn.local_flow_control_window(sid), conn.max_outbound_frame_size, left)
        if room > 0:
            conn.send_data(sid, b"x" * room, end_stream=(room == left))
            left -= room
            sock.sendall(conn.data_to_send())
            continue
        pump(sock, conn, r)  # a WINDOW_UPDATE
        if sid in r.ended or sid in r.reset:
            break
    while sid not in r.ended and sid not in r.reset:
        pump(sock, conn, r)
    print(r.status.get(sid, "reset"), bytes(r.body.get(sid, b"")).decode())


def reset(port, path, tls):
    sock, conn = connect(port, tls)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, request_headers("GET", path), end_stream=True)
    sock.sendall(conn.data_to_send())
    r = responses()
    while sid not in r.status:
        pump(sock, conn, r)
    conn.reset_stream(sid, error_code=8)  # CANCEL
    sock.sendall(conn.data_to_send())
    # One more request on the same connection shows it is still served.
    sid2 = conn.get_next_available_stream_id()
    conn.send_headers(sid2, request_headers("GET", "/"), end_stream=True)
    sock.sendall(conn.data_to_send())
    while sid2 not in r.ended:
        pump(sock, conn, r)
    print("reset", r.status.get(sid2))


def idle(port, path, tls):
    sock, conn = connect(port, tls)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, request_headers("GET", path), end_stream=True)
    sock.sendall(conn.data_to_send())
    sock.settimeout(60)
    while True:
        data = sock.recv(65536)
        if not data:
            print("eof")
            return
        for e in conn.receive_data(data):
            if isinstance(e, h2.events.ConnectionTerminated):
                print("goaway", e.error_code, e.last_stream_id)
            elif isinstance(e, h2.events.DataReceived):
                conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
        out = conn.data_to_send()
        if out:
            try:
                sock.sendall(out)
            except OSError:
                pass


def frames(sock, buf=b""):
    """The server's frames as (type, flags, stream, payload) until it closes."""
    while True:
        while len(buf) >= 9:
            length = int.from_bytes(buf[0:3], "big")
            if len(buf) < 9 + length:
                break
            kind, flags = buf[3], buf[4]
            stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            yield kind, flags, stream, buf[9:9 + length]
            buf = buf[9 + length:]
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            return
        buf += data


DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0, 1, 3, 4, 6, 7


def slow_body(port, path, tls):
    sock, conn = connect(port, tls)
    busy = conn.get_next_available_stream_id()
    conn.send_headers(busy, request_headers("GET", path), end_stream=True)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, request_headers("POST", "/upload", [("content-length", "100")]))
    conn.send_data(sid, b"x" * 10)
    sock.sendall(conn.data_to_send())
    sock.settimeout(60)
    r = responses()
    codes = {}
    while sid not in r.ended and sid not in r.reset:
        data = sock.recv(65536)
        if not data:
            sys.exit("the server closed the connection")
        events = conn.receive_data(data)
        for e in events:
            if isinstance(e, h2.events.StreamReset):
                codes[e.stream_id] = e.error_code
        r.take(conn, events)
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
    ending = "ended" if sid in r.ended else "reset %d" % codes[sid]
    nxt = conn.get_next_available_stream_id()
    conn.send_headers(nxt, request_headers("GET", "/"), end_stream=True)
    sock.sendall(conn.data_to_send())
    while nxt not in r.ended:
        pump(sock, conn, r)
    print(r.status.get(sid, "-"), ending)
    print(r.status.get(nxt))


def slow_headers(port, path, tls):
    sock, conn = connect(port, tls)
    busy = conn.get_next_available_stream_id()
    conn.send_headers(busy, request_headers("GET", path), end_stream=True)
    sock.sendall(conn.data_to_send())
    second = conn.get_next_available_stream_id()
    conn.send_headers(second, request_headers("GET", "/"), end_stream=True)
    frame = conn.data_to_send()
    sock.sendall(frame[:len(frame) // 2])
    sock.settimeout(60)
    for kind, _, _, payload in frames(sock):
        if kind == GOAWAY:
            print("goaway", int.from_bytes(payload[4:8], "big"))
    print("eof")


def zero_window(port, path, tls):
    sock, conn = connect(port, tls)
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, request_headers("GET", path), end_stream=True)
    sock.sendall(conn.data_to_send())
    sock.settimeout(60)
    reset_code = None
    while True:
        data = sock.recv(65536)
        if not data:
            sys.exit("the server closed the connection")
        for e in conn.receive_data(data):
            if isinstance(e, h2.events.StreamReset) and e.stream_id == sid:
                reset_code = e.error_code
                print("reset", reset_code)
                conn.ping(b"12345678")
            elif isinstance(e, h2.events.PingAckReceived):
                print("ping")
                return
            elif isinstance(e, h2.events.ConnectionTerminated):
                sys.exit("GOAWAY: %s" % e)
        out = conn.data_to_send()
        if out:
            sock.sendall(out)


def no_ack(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, SETTINGS, 0, 0, 0, 0, 0]))
    for kind, _, _, payload in frames(sock):
        if kind == GOAWAY:
            print("goaway", int.from_bytes(payload[4:8], "big"))
    print("eof")


def get(port, path, tls, mute_at_goaway, settle=False):
    sock, conn = connect(port, tls)
    sock.settimeout(60)
    server_frames = frames(sock)
    if settle:
        # The server's SETTINGS acknowledged before the request goes: once it has answered,
        # nothing of ours is left unread on its side.
        for kind, flags, stream, payload in server_frames:
            answer(sock, kind, flags, payload)
            if kind == SETTINGS and not flags & 1:
                break
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, request_headers("GET", path), end_stream=True)
    sock.sendall(conn.data_to_send())
    muted = False
    length = 0
    for kind, flags, stream, payload in server_frames:
        if kind == GOAWAY:
            last = int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF
            print("goaway", int.from_bytes(payload[4:8], "big"), last)
            muted = mute_at_goaway
        elif not muted:
            answer(sock, kind, flags, payload)
        if kind == DATA and stream == sid:
            length += len(payload)
            if flags & 1:
                print(length, "ended")
    print("eof")


def pings(port, tls):
    sock, conn = connect(port, tls)
    sock.settimeout(60)
    buf = b""
    goaway = False
    last_ping = 0.0
    while True:
        if not goaway and time.monotonic() - last_ping >= 0.02:
            sock.sendall(bytes([0, 0, 8, PING, 0, 0, 0, 0, 0]) + b"12345678")
            last_ping = time.monotonic()
        ready, _, _ = select.select([sock], [], [], 0.02)
        if not ready:
            continue
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            print("eof")
            return
        buf += data
        while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[0:3], "big"):
            length = int.from_bytes(buf[0:3], "big")
            kind, flags, payload = buf[3], buf[4], buf[9:9 + length]
            buf = buf[9 + length:]
            answer(sock, kind, flags, payload)
            if kind == GOAWAY:
                last = int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF
                print("goaway", int.from_bytes(payload[4:8], "big"), last)
                goaway = True


def dead(port, path, tls):
    sock, conn = connect(port, tls)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, request_headers("GET", path), end_stream=True)
    sock.sendall(conn.data_to_send())
    sock.settimeout(60)
    pinged = False
    for kind, flags, _, payload in frames(sock):
        if kind == PING and not flags & 1 and not pinged:
            print("ping")
            pinged = True
        elif kind == GOAWAY:
            print("goaway", int.from_bytes(payload[4:8], "big"))
        elif kind == SETTINGS:
            answer(sock, kind, flags, payload)
    print("eof")


def answered_then(port, path, tls, then):
    """A GET of PATH read to its end, then `then` (the socket): prints "<length> ended"."""
    sock, conn = connect(port, tls)
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, request_headers("GET", path), end_stream=True)
    sock.sendall(conn.data_to_send())
    sock.settimeout(60)
    r = responses()
    while sid not in r.ended:
        pump(sock, conn, r)
    print(len(r.body.get(sid, b"")), "ended")
    then(sock)


def client_goaway(port, path, tls):
    def send_goaway(sock):
        sock.sendall(bytes([0, 0, 8, GOAWAY, 0, 0, 0, 0, 0]) + bytes(8))  # last 0, NO_ERROR
        while sock.recv(65536):
            pass
        print("eof")
    answered_then(port, path, tls, send_goaway)


def client_close(port, path, tls):
    answered_then(port, path, tls, lambda sock: sock.close())


def frame(port, hex_frame, tls):
    sock, conn = connect(port, tls)
    sock.settimeout(60)
    sock.sendall(bytes.fromhex(hex_frame))
    for kind, _, _, payload in frames(sock):
        if kind == GOAWAY:
            print("goaway", int.from_bytes(payload[4:8], "big"))
    print("eof")


def ping_flood(port, tls):
    sock, conn = connect(port, tls)
    sock.settimeout(60)
    ping = bytes([0, 0, 8, PING, 0, 0, 0, 0, 0]) + b"flooding"
    sock.sendall(ping)
    for kind, flags, _, payload in frames(sock):
        if kind == PING and flags & 1:
            try:
                sock.sendall(ping)
            except OSError:
                pass
        elif kind == GOAWAY:
            print("goaway", int.from_bytes(payload[4:8], "big"))
    print("eof")


def answer(sock, kind, flags, payload):
    """What a client must answer: a SETTINGS' ACK, a PING's."""
    try:
        if kind == SETTINGS and not flags & 1:
            sock.sendall(bytes([0, 0, 0, SETTINGS, 1, 0, 0, 0, 0]))
        elif kind == PING and not flags & 1:
            sock.sendall(bytes([0, 0, 8, PING, 1, 0, 0, 0, 0]) + payload)
    except OSError:
        pass


def partial(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(b"PRI * HTTP/2.0\r\n")
    while sock.recv(65536):
        pass
    print("eof")


def main():
    args = [a for a in sys.argv[1:] if a != "--tls"]
    tls = "--tls" in sys.argv
    global SCHEME
    SCHEME = "https" if tls else "http"
    port, mode = int(args[0]), args[1]
    if mode == "streams":
        streams(port, int(args[2]), args[3], tls)
    elif mode == "post":
        post(port, int(args[2]), args[3], tls)
    elif mode == "reset":
        reset(port, args[2], tls)
    elif mode == "idle":
        idle(port, args[2], tls)
    elif mode == "partial":
        partial(port)
    elif mode == "slow-body":
        slow_body(port, args[2], tls)
    elif mode == "slow-headers":
        slow_headers(port, args[2], tls)
    elif mode == "zero-window":
        zero_window(port, args[2], tls)
    elif mode == "no-ack":
        no_ack(port)
    elif mode == "mute":
        get(port, args[2], tls, True)
    elif mode == "get":
        get(port, args[2], tls, False)
    elif mode == "settled-get":
        get(port, args[2], tls, False, True)
    elif mode == "pings":
        pings(port, tls)
    elif mode == "dead":
        dead(port, args[2], tls)
    elif mode == "goaway":
        client_goaway(port, args[2], tls)
    elif mode == "close":
        client_close(port, args[2], tls)
    elif mode == "frame":
        frame(port, args[2], tls)
    elif mode == "ping-flood":
        ping_flood(port, tls)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
