#!/usr/bin/env python3
"""Clients for load/proxy's upstream keep-alive race: waves of requests through a proxy, with an
idle gap between waves spread around the backend's keep-alive timeout.

    race_clients.py --target 127.0.0.1:18281 --clients 50 --duration 110 --gap 5.95:6.12

Each of --clients clients holds one keep-alive connection to the proxy. Every wave, all of them
send one request at the same moment (so the proxy's pool grows to about --clients upstream
connections), read the answer, then everyone waits the same gap before the next wave. The gaps
sweep --gap MIN:MAX in --steps even steps, wave after wave (and again from MIN), so that some
wave lands within a few milliseconds of the backend's close whatever this machine's exact
timing. A pooled upstream connection is therefore idle for the gap when the
next wave reuses it: gaps around the backend's own idle timeout make the proxy send requests on
connections the backend is closing at that moment. Half the requests are POSTs with a small body
(no proxy may replay those), half GETs.

The proxy's own client keep-alive timeout must be longer than the gaps, so that every failure
counted is the upstream race. Prints "key value" lines: requests, ok, and failures by kind
(status_502, reset, eof, timeout). Loopback targets only.
"""

import argparse
import asyncio
import ipaddress
import sys
from collections import Counter

stats: Counter = Counter()


async def read_response(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
        elif name.strip().lower() == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    else:
        await reader.readexactly(length)
    return head


class Client:
    def __init__(self, host: str, port: int, index: int):
        self.host, self.port, self.index = host, port, index
        self.reader = self.writer = None

    async def request(self, wave: int) -> None:
        if self.writer is None or self.writer.is_closing() or self.reader.at_eof():
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            stats["client_connections"] += 1
        if (wave + self.index) % 2:
            req = (b"POST /race HTTP/1.1\r\nHost: race\r\nContent-Type: text/plain\r\n"
                   b"Content-Length: 16\r\n\r\n0123456789abcdef")
            kind = "post"
        else:
            req = b"GET /race HTTP/1.1\r\nHost: race\r\n\r\n"
            kind = "get"
        stats["requests"] += 1
        stats[f"requests_{kind}"] += 1
        outcome = "ok"
        try:
            self.writer.write(req)
            async with asyncio.timeout(10):
                head = await read_response(self.reader)
            status = head.split(b" ", 2)[1].decode()
            if not status.startswith("2"):
                outcome = f"status_{status}"
        except TimeoutError:
            outcome = "timeout"
        except asyncio.IncompleteReadError:
            outcome = "eof"
        except (ConnectionResetError, BrokenPipeError):
            outcome = "reset"
        if outcome == "ok":
            stats["ok"] += 1
        else:
            stats["failed"] += 1
            stats[f"failed_{outcome}"] += 1
            stats[f"failed_{kind}"] += 1
            self.writer.close()
            self.writer = None


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--gap", default="5.95:6.12", help="MIN:MAX seconds between waves")
    ap.add_argument("--steps", type=int, default=18, help="gaps in the sweep")
    args = ap.parse_args()
    host, _, port = args.target.rpartition(":")
    if not ipaddress.ip_address(host).is_loopback:
        print(f"race_clients.py: {host} is not a loopback address", file=sys.stderr)
        return 2
    lo, hi = (float(x) for x in args.gap.split(":"))
    step = (hi - lo) / max(1, args.steps - 1)
    clients = [Client(host, int(port), i) for i in range(args.clients)]
    loop = asyncio.get_running_loop()
    end = loop.time() + args.duration
    wave = 0
    while loop.time() < end:
        await asyncio.gather(*(c.request(wave) for c in clients))
        wave += 1
        await asyncio.sleep(lo + ((wave - 1) % args.steps) * step)
    stats["waves"] = wave
    for k in sorted(stats):
        print(k, stats[k])
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
