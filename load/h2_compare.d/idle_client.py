"""The idle HTTP/2 clients of load/h2_compare (python3-h2, one process, blocking sockets).

    idle_client.py PORT N h2c|tls [--checkpoint K --go FILE] [--close]

Opens N connections one after another, h2c with prior knowledge or h2 over TLS (ALPN h2 only),
and on each sends one GET whose fields a browser sends with incremental indexing, so that they
go into the server's HPACK table (about 330 bytes of it), reads the whole response, then holds
the connection open and silent. After K connections it prints "checkpoint K" and waits for FILE
to exist (the script reads the server's memory meanwhile); after N it prints "ready" and sleeps
until it is killed. --close: close them all and exit instead (the warm-up).
"""
import argparse
import os
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
parser.add_argument("n", type=int)
parser.add_argument("kind", choices=["h2c", "tls"])
parser.add_argument("--checkpoint", type=int, default=0)
parser.add_argument("--go", default="")
parser.add_argument("--close", action="store_true")
args = parser.parse_args()
tls = args.kind == "tls"

ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["h2"])
fields = [(":method", "GET"), (":path", "/"), (":scheme", "https" if tls else "http"),
          (":authority", "localhost:%d" % args.port),
          ("user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                         "Chrome/120.0 Safari/537.36"),
          ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
          ("accept-language", "en-US,en;q=0.9"), ("accept-encoding", "gzip, deflate, br"),
          ("sec-fetch-mode", "navigate")]


def one_connection():
    s = socket.create_connection(("127.0.0.1", args.port))
    if tls:
        s = ctx.wrap_socket(s, server_hostname="localhost")
        if s.selected_alpn_protocol() != "h2":
            sys.exit("ALPN chose %r, not h2" % s.selected_alpn_protocol())
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    c.initiate_connection()
    c.send_headers(1, fields, end_stream=True)
    s.sendall(c.data_to_send())
    status = None
    done = False
    while not done:
        data = s.recv(65536)
        if not data:
            sys.exit("the server closed a connection before its response ended")
        for e in c.receive_data(data):
            if isinstance(e, h2.events.ResponseReceived):
                status = dict(e.headers).get(b":status")
            elif isinstance(e, h2.events.StreamEnded):
                done = True
            elif isinstance(e, h2.events.ConnectionTerminated):
                sys.exit("GOAWAY from the server: %r" % e)
        out = c.data_to_send()
        if out:
            s.sendall(out)
    if status != b"200":
        sys.exit("status %r, not 200" % status)
    return s, c


held = []
for i in range(args.n):
    held.append(one_connection())
    if args.checkpoint and len(held) == args.checkpoint and len(held) < args.n:
        print("checkpoint %d" % len(held), flush=True)
        while not os.path.exists(args.go):
            time.sleep(0.05)
if args.close:
    for s, _ in held:
        s.close()
    print("closed %d" % len(held), flush=True)
    sys.exit(0)
print("ready %d" % len(held), flush=True)
time.sleep(3600)
