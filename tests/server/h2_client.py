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
"""
import socket
import ssl
import sys

import h2.config
import h2.connection
import h2.events


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
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
