#!/usr/bin/env python3
"""Misbehaving HTTP/1.1 clients for load/soak: partial requests that stall, stalled bodies,
malformed requests, client resets and clients that never read their responses.

    soak_clients.py --target 127.0.0.1:18361 --duration 20 --timeout 1

Each kind runs at its own rate (connections per second) for --duration seconds, then the script
waits for the connections still open (at most --timeout + 4 s) and prints one "key value" line
per figure, for load/soak to read. --timeout is the server's header/body/send timeout: it only
bounds how long the clients wait for the server to close them.

  stall      half send nothing, half a request line and part of a header, then wait: the
             server must close them by header_timeout (silently / with 408)
  body       a POST to a file whose body stops after 10 of 100 bytes: 405 at once (files take
             no body), then the server lingers, discarding, until lingering_timeout
  malformed  one of six invalid requests: 400 (or 505) and close
  reset      close with SO_LINGER 0 (RST): after a response, mid-request, or with 32 pipelined
             requests unread
  sendstall  a small receive buffer, GET --big-path (a file larger than the socket buffers,
             served from the docroot), never read: the server must close them by send_timeout
  crlf       after a response, "\r\n" every timeout/3 s: tolerated, not activity, so the
             server must still close them by keep_alive_timeout (kept_alive counts those still
             open --timeout + 4 s after their response; on a saturated machine a close can be
             seen a second or more late, so nothing finer is judged here)
  pipepart   pipelining for 2 s, each write one and a half requests: every request answered
  blind      a 2 MiB body sent whole before reading, against the 1 MiB max_body_bytes: the
             server answers 4xx at the header and lingers, so the status arrives, no reset

Loopback targets only.
"""

import argparse
import asyncio
import ipaddress
import resource
import socket
import struct
import sys
import time
from collections import Counter

MALFORMED = [
    b"GET / HTTP/1.1\r\nHost: soak\r\nBad Header Line\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: soak\r\nContent-Length: abc\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: soak\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
    b"GET / HTTP/1.1\r\n\r\n",
    b"GET / HTTP/9.9\r\nHost: soak\r\n\r\n",
]
GET = b"GET / HTTP/1.1\r\nHost: soak\r\n\r\n"
TCP_STATES = {1: "established", 7: "close", 8: "close_wait"}

stats = Counter()


def status_of(data: bytes) -> str:
    if not data:
        return "none"
    parts = data.split(b" ", 2)
    return parts[1].decode("ascii", "replace") if len(parts) > 1 else "garbage"


def rst(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def pipeline_in_halves(writer: asyncio.StreamWriter, request: bytes, until: float,
                             gap: float, go_on=lambda: True) -> int:
    """Pipelines `request` until time.monotonic() reaches `until` (or go_on() is false), each
    write one and a half requests, so that most writes end in the middle of one; then completes
    the last. Returns the number of requests sent."""
    step, buf, written = len(request) + len(request) // 2, b"", 0
    while time.monotonic() < until and go_on():
        while len(buf) < step:
            buf += request
        chunk, buf = buf[:step], buf[step:]
        writer.write(chunk)
        written += len(chunk)
        await writer.drain()
        await asyncio.sleep(gap)
    writer.write(buf)
    await writer.drain()
    return (written + len(buf)) // len(request)


async def read_to_eof(reader: asyncio.StreamReader, limit: float) -> tuple[bytes, str]:
    """Everything until the server closes: (data, "eof" | "reset" | "timeout")."""
    chunks = []
    try:
        async with asyncio.timeout(limit):
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    return b"".join(chunks), "eof"
                chunks.append(chunk)
    except TimeoutError:
        return b"".join(chunks), "timeout"
    except (ConnectionResetError, BrokenPipeError):
        return b"".join(chunks), "reset"


class Clients:
    def __init__(self, host: str, port: int, timeout: float, big_path: str):
        self.host, self.port, self.timeout, self.big_path = host, port, timeout, big_path
        self.wait_limit = timeout + 4.0

    async def connect(self):
        async with asyncio.timeout(5):
            return await asyncio.open_connection(self.host, self.port)

    async def stall(self, i: int) -> None:
        # The server's clock starts at accept, after our connect began: a close seen less
        # than the timeout after this instant was certainly early.
        started = time.monotonic()
        reader, writer = await self.connect()
        silent = i % 2 == 0
        if not silent:
            writer.write(b"GET /stall HTTP/1.1\r\nHost: soak\r\nX-Partial: ")
        data, how = await read_to_eof(reader, self.wait_limit)
        waited = time.monotonic() - started
        writer.close()
        kind = "silent" if silent else "partial"
        stats[f"stall_{kind}_{how}"] += 1
        stats[f"stall_{kind}_status_{status_of(data)}"] += 1
        if how != "timeout" and waited < self.timeout:
            stats["stall_closed_early"] += 1

    async def body(self, i: int) -> None:
        reader, writer = await self.connect()
        writer.write(b"POST /upload HTTP/1.1\r\nHost: soak\r\nContent-Length: 100\r\n\r\n"
                     + b"x" * 10)
        data, how = await read_to_eof(reader, self.wait_limit)
        writer.close()
        stats[f"body_{how}"] += 1
        stats[f"body_status_{status_of(data)}"] += 1

    async def malformed(self, i: int) -> None:
        reader, writer = await self.connect()
        writer.write(MALFORMED[i % len(MALFORMED)])
        data, how = await read_to_eof(reader, self.wait_limit)
        writer.close()
        stats[f"malformed_{how}"] += 1
        stats[f"malformed_status_{status_of(data)}"] += 1

    async def reset(self, i: int) -> None:
        reader, writer = await self.connect()
        variant = i % 3
        if variant == 0:  # after a whole response: the connection is idle when the RST comes
            writer.write(GET)
            async with asyncio.timeout(self.wait_limit):
                await reader.readuntil(b"Hello, World!")
            stats["reset_after_response"] += 1
        elif variant == 1:  # mid-request
            writer.write(b"GET / HTTP/1.1\r\nHost: so")
            await writer.drain()
            await asyncio.sleep(0.005)
            stats["reset_mid_request"] += 1
        else:  # responses in flight, never read
            writer.write(GET * 32)
            await writer.drain()
            stats["reset_unread_pipeline"] += 1
        rst(writer)

    async def sendstall(self, i: int) -> None:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: small window
        sock.setblocking(False)
        try:
            async with asyncio.timeout(5):
                await loop.sock_connect(sock, (self.host, self.port))
                await loop.sock_sendall(sock, b"GET " + self.big_path.encode() +
                                        b" HTTP/1.1\r\nHost: soak\r\n\r\n")
            # Never read. The server must give up by send_timeout; its FIN cannot even reach us
            # through a full window, so only /metrics can tell, not this client.
            await asyncio.sleep(self.timeout + 1.5)
            state = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]
            stats[f"sendstall_tcp_state_{TCP_STATES.get(state, state)}"] += 1
        finally:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()

    async def crlf(self, i: int) -> None:
        reader, writer = await self.connect()
        writer.write(GET)
        async with asyncio.timeout(self.wait_limit):
            await reader.readuntil(b"Hello, World!")
        answered = time.monotonic()
        how = "timeout"
        try:
            async with asyncio.timeout(self.wait_limit):
                while True:
                    try:
                        async with asyncio.timeout(self.timeout / 3):
                            if not await reader.read(1024):
                                how = "eof"
                                break
                    except TimeoutError:
                        writer.write(b"\r\n")
                        await writer.drain()
        except TimeoutError:
            pass
        except (ConnectionResetError, BrokenPipeError):
            how = "reset"
        writer.close()
        stats[f"crlf_{how}"] += 1
        if how == "timeout":  # still open timeout + 4 s after the response: the CRLFs kept it
            stats["crlf_kept_alive"] += 1
        else:
            lived_ms = int((time.monotonic() - answered) * 1000)
            stats["crlf_lived_max_ms"] = max(stats["crlf_lived_max_ms"], lived_ms)

    async def pipepart(self, i: int) -> None:
        reader, writer = await self.connect()
        sent = await pipeline_in_halves(writer, GET, time.monotonic() + 2.0, 0.05)
        answered = 0
        async with asyncio.timeout(self.wait_limit):
            while answered < sent:
                await reader.readuntil(b"Hello, World!")
                answered += 1
        writer.close()
        stats["pipepart_sent"] += sent
        stats["pipepart_answered"] += answered

    async def blind(self, i: int) -> None:
        reader, writer = await self.connect()
        size = 2 << 20
        writer.write(b"POST / HTTP/1.1\r\nHost: soak\r\nContent-Length: %d\r\n\r\n" % size)
        block = b"b" * 65536
        try:
            for _ in range(size // len(block)):
                writer.write(block)
                await writer.drain()
            async with asyncio.timeout(self.wait_limit):
                head = await reader.readuntil(b"\r\n\r\n")
            stats[f"blind_status_{status_of(head)}"] += 1
        except (ConnectionResetError, BrokenPipeError):
            stats["blind_reset"] += 1
        writer.close()


async def guarded(kind: str, coro) -> None:
    stats[f"{kind}_opened"] += 1
    try:
        await coro
    except (TimeoutError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
        stats[f"{kind}_client_error_{type(e).__name__}"] += 1


async def spawn(kind: str, rate: float, make, deadline: float, cap: int = 4000) -> None:
    if rate <= 0:
        return
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task] = set()
    interval = 1.0 / rate
    next_at = loop.time()
    i = 0
    while loop.time() < deadline:
        if len(tasks) < cap:
            task = asyncio.create_task(guarded(kind, make(i)))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        else:
            stats[f"{kind}_skipped_at_cap"] += 1
        i += 1
        next_at += interval
        now = loop.time()
        if next_at < now - 1.0:  # fell far behind (a busy machine): do not burst to catch up
            next_at = now
        await asyncio.sleep(max(0.0, next_at - now))
    if tasks:
        await asyncio.wait(tasks)


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="127.0.0.1:18361")
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--timeout", type=float, default=1.0,
                    help="the server's header/body/send timeout, seconds")
    ap.add_argument("--stall-rate", type=float, default=100)
    ap.add_argument("--body-rate", type=float, default=20)
    ap.add_argument("--malformed-rate", type=float, default=150)
    ap.add_argument("--reset-rate", type=float, default=150)
    ap.add_argument("--sendstall-rate", type=float, default=5)
    ap.add_argument("--crlf-rate", type=float, default=20)
    ap.add_argument("--pipepart-rate", type=float, default=5)
    ap.add_argument("--blind-rate", type=float, default=5)
    ap.add_argument("--big-path", default="/big.bin",
                    help="a file larger than the socket buffers, for sendstall")
    args = ap.parse_args()

    host, _, port = args.target.rpartition(":")
    if not ipaddress.ip_address(host).is_loopback:
        print(f"soak_clients.py: {host} is not a loopback address", file=sys.stderr)
        return 2
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    c = Clients(host, int(port), args.timeout, args.big_path)
    deadline = asyncio.get_running_loop().time() + args.duration
    await asyncio.gather(
        spawn("stall", args.stall_rate, c.stall, deadline),
        spawn("body", args.body_rate, c.body, deadline),
        spawn("malformed", args.malformed_rate, c.malformed, deadline),
        spawn("reset", args.reset_rate, c.reset, deadline),
        spawn("sendstall", args.sendstall_rate, c.sendstall, deadline),
        spawn("crlf", args.crlf_rate, c.crlf, deadline),
        spawn("pipepart", args.pipepart_rate, c.pipepart, deadline),
        spawn("blind", args.blind_rate, c.blind, deadline),
    )
    for key in sorted(stats):
        print(key, stats[key])
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
