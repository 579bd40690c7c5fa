#!/usr/bin/env python3
"""Runs the vendored h1spec conformance cases through tarry's reverse proxy.

Starts, all on 127.0.0.1 with ports the kernel picks (port 0):
  app      echo_app.js under Node.js, the application behind the proxy;
  proxy    tarry --proxy 127.0.0.1:<app port>, the server under test;
  builtin  (unless --no-builtin) a second tarry with no route, answering Hello, World! itself.
Then runs every h1spec case (strict and hardening ones included) against proxy, app and builtin,
recording each case's socket traffic: the bytes sent, where the client half-closed
(shutdown(SHUT_WR)), the bytes received, and whether it ended on EOF, a timeout or a reset.
Each response head is attributed: one with X-Echo-App came from the app (echo_app.js marks all
of its own answers), one without from tarry.

A case counts as passed when h1spec's own check passes and, in addition, every connection it
half-closed got a response (h1spec takes "no response" as "not 400" in "Chunked encoding
accepted"); only a hardening case's first, oversized, request may go unanswered.

Exit status: 1 if a case fails through the proxy (with --require half-close: only a case that
half-closes), or if a tarry exits uncleanly (a crash, a sanitizer report) when it is stopped;
2 if something could not be started; 0 otherwise. The app and builtin runs are for comparison
and never fail the run. Every process started here is stopped before it returns.

Usage: run_h1spec.py --tarry PATH [--node node] [--require all|half-close] [--no-builtin]
                     [--verbose] [--json FILE]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from h1spec import client as h1client  # noqa: E402  (vendored, unmodified)
from h1spec.runner import run_test  # noqa: E402
from h1spec.tests import SECTIONS  # noqa: E402

# --------------------------------------------------------------------------------------------
# Recording the traffic of each case
# --------------------------------------------------------------------------------------------


class Recorder:
    """The connections a case opened, each a list of (event, bytes) in order."""

    def __init__(self) -> None:
        self.connections: list[list[tuple[str, bytes]]] = []

    def new_connection(self) -> list[tuple[str, bytes]]:
        events: list[tuple[str, bytes]] = []
        self.connections.append(events)
        return events


_current: Recorder | None = None


class RecordingSocket(socket.socket):
    """A socket that logs what h1spec sends, receives and shuts down."""

    def _events(self) -> list[tuple[str, bytes]]:
        return self.__dict__.setdefault("_log", [])

    def _add(self, event: str, data: bytes = b"") -> None:
        log = self._events()
        if log and log[-1][0] == event and event in ("send", "recv"):
            log[-1] = (event, log[-1][1] + data)  # merge consecutive reads/writes
        else:
            log.append((event, data))

    def sendall(self, data, *args):
        try:
            result = super().sendall(data, *args)
        except OSError as e:
            self._add("send", bytes(data))
            self._add(f"send-error {type(e).__name__}")
            raise
        self._add("send", bytes(data))
        return result

    def send(self, data, *args):
        n = super().send(data, *args)
        self._add("send", bytes(data[:n]))
        return n

    def recv(self, n, *args):
        try:
            data = super().recv(n, *args)
        except TimeoutError:
            self._add(f"timeout after {self.gettimeout()}s")
            raise
        except OSError as e:
            self._add(f"recv-error {type(e).__name__}")
            raise
        if data:
            self._add("recv", data)
        else:
            self._add("eof")
        return data

    def shutdown(self, how):
        self._add("shutdown(SHUT_WR)" if how == socket.SHUT_WR else f"shutdown({how})")
        return super().shutdown(how)


def _recording_create_connection(address, timeout=None, *args, **kwargs):
    s = RecordingSocket(socket.AF_INET, socket.SOCK_STREAM)
    if _current is not None:
        s.__dict__["_log"] = _current.new_connection()
    if timeout is not None:
        s.settimeout(timeout)
    try:
        s.connect(address)
    except OSError as e:
        s._add(f"connect-error {type(e).__name__}")
        s.close()
        raise
    return s


# h1spec.client.connect calls socket.create_connection(addr, timeout=5) through the module.
h1client.socket = type(sys)("h1spec_socket_shim")
h1client.socket.__dict__.update(socket.__dict__)
h1client.socket.create_connection = _recording_create_connection

# --------------------------------------------------------------------------------------------
# Response attribution
# --------------------------------------------------------------------------------------------

_STATUS_LINE = re.compile(rb"HTTP/\d\.\d (\d{3})[^\r\n]*\r\n")


def responses_in(data: bytes, unmarked: str) -> list[tuple[int, str]]:
    """(status, origin) for each response head found in the received bytes; a head without
    X-Echo-App is labelled `unmarked` (tarry, through a tarry; Node itself, for the app)."""
    found = []
    for m in _STATUS_LINE.finditer(data):
        end = data.find(b"\r\n\r\n", m.start())
        head = data[m.start() : end if end >= 0 else len(data)]
        mark = re.search(rb"\r\nx-echo-app:\s*([^\r\n]*)", head, re.IGNORECASE)
        origin = "app" if mark and mark.group(1) == b"1" else \
            f"app({mark.group(1).decode()})" if mark else unmarked
        found.append((int(m.group(1)), origin))
    return found


def show(data: bytes, limit: int) -> str:
    text = repr(data[:limit])[2:-1]
    return text + (f"... (+{len(data) - limit} more bytes)" if len(data) > limit else "")


def transcript(rec: Recorder, limit: int) -> list[str]:
    lines = []
    for i, events in enumerate(rec.connections, 1):
        lines.append(f"connection {i}:")
        for event, data in events:
            if event in ("send", "recv"):
                arrow = ">>" if event == "send" else "<<"
                lines.append(f"  {arrow} {len(data)} bytes: {show(data, limit)}")
            else:
                lines.append(f"  -- {event}")
    return lines


# --------------------------------------------------------------------------------------------
# The processes
# --------------------------------------------------------------------------------------------


def _die_with_parent() -> None:
    # If this runner is killed (a ctest timeout), the kernel ends the children too.
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Child:
    def __init__(self, name: str, argv: list[str], log_path: str, ready: re.Pattern):
        self.name, self.argv, self.log_path = name, argv, log_path
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        self.port = self._wait_port(ready)
        self.exit_code: int | None = None

    def _wait_port(self, ready: re.Pattern, seconds: float = 15) -> int:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                m = ready.search(f.read())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"{self.name} did not start ({' '.join(self.argv)}):\n"
                           f"{self.log_tail()}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, seconds: float = 15) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(seconds)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.exit_code = self.proc.returncode
        self.log.close()
        return self.exit_code

    def log_tail(self, lines: int = 30) -> str:
        with open(self.log_path, "rb") as f:
            tail = f.read().decode(errors="replace").splitlines()[-lines:]
        return "\n".join(f"    {line}" for line in tail)


TARRY_READY = re.compile(rb"listening on 127\.0\.0\.1:(\d+)")
APP_READY = re.compile(rb"^(\d+)\n", re.MULTILINE)

# --------------------------------------------------------------------------------------------
# Running the cases
# --------------------------------------------------------------------------------------------


def run_cases(addr: tuple[str, int], unmarked: str) -> list[dict]:
    global _current
    results = []
    num = 0
    for section in SECTIONS:
        for case in section.tests:
            num += 1
            _current = Recorder()
            started = time.monotonic()
            result = run_test(case.name, case.fn, addr)
            elapsed = time.monotonic() - started
            rec, _current = _current, None
            half_close = any(ev == "shutdown(SHUT_WR)" for c in rec.connections for ev, _ in c)
            received = [b"".join(d for ev, d in c if ev == "recv") for c in rec.connections]
            responses = [responses_in(r, unmarked) for r in received]
            # A half-closed connection that got no response at all; h1spec passes some of these
            # (a valid chunked POST only needs "not 400"). Only a hardening case's first,
            # oversized, request may be dropped without an answer.
            silent = [i for i, (c, resp) in enumerate(zip(rec.connections, responses), 1)
                      if not resp and any(ev == "shutdown(SHUT_WR)" for ev, _ in c)
                      and not (case.hardening and i == 1)]
            ok = bool(result.passed) and not silent
            results.append({
                "num": num,
                "section": section.name,
                "name": case.name,
                "function": case.fn.__name__,
                "strict": case.strict,
                "hardening": case.hardening,
                "h1spec_passed": bool(result.passed),
                "passed": ok,
                "detail": result.detail or (
                    f"h1spec passes it, but half-closed connection(s) {silent} got no response"
                    if silent else ""),
                "half_close": half_close,
                "seconds": round(elapsed, 3),
                "responses": responses,
                "recorder": rec,
            })
    return results


def origins(result: dict) -> str:
    parts = []
    for conn in result["responses"]:
        parts.append(",".join(f"{status}<{origin}" for status, origin in conn) or "none")
    return " | ".join(parts)


def report(label: str, results: list[dict], *, verbose: bool, limit: int) -> None:
    passed = sum(r["passed"] for r in results)
    upstream = sum(r["h1spec_passed"] for r in results)
    print(f"\n=== h1spec against {label}: {passed}/{len(results)} passed"
          + (f" ({upstream} by h1spec's own checks, before the no-response check)"
             if upstream != passed else ""))
    for r in results:
        mark = "PASS" if r["passed"] else "FAIL"
        tags = [t for t in ("half-close" if r["half_close"] else "",
                            "strict" if r["strict"] else "",
                            "hardening" if r["hardening"] else "") if t]
        print(f"  {mark} {r['num']:2}. {r['name']} [{', '.join(tags) or 'no half-close'}]"
              f"  responses: {origins(r)}  ({r['seconds']}s)")
        if r["detail"]:
            print(f"        {r['detail']}")
        if verbose or not r["passed"]:
            for line in transcript(r["recorder"], limit):
                print(f"        {line}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tarry", required=True, help="path of the tarry binary")
    ap.add_argument("--node", default="node", help="Node.js executable (default: node)")
    ap.add_argument("--require", choices=("all", "half-close"), default="all",
                    help="which cases must pass through the proxy (default: all)")
    ap.add_argument("--no-builtin", action="store_true",
                    help="skip the comparison run against tarry's built-in answer")
    ap.add_argument("--verbose", action="store_true", help="print every case's transcript")
    ap.add_argument("--bytes", type=int, default=400,
                    help="bytes shown per direction in a transcript (default 400)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON here")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="tarry-h1spec-")
    tarry_common = ["--workers", "1", "--drain-timeout", "2s", "--log-level", "info"]
    children: list[Child] = []
    runs: dict[str, list[dict]] = {}
    exit_code = 0
    try:
        try:
            app = Child("app", [args.node, os.path.join(HERE, "echo_app.js"), "0"],
                        os.path.join(work, "app.log"), APP_READY)
            children.append(app)
            proxy = Child("tarry proxy",
                          [args.tarry, "--listen", "127.0.0.1:0",
                           "--proxy", f"127.0.0.1:{app.port}", *tarry_common],
                          os.path.join(work, "tarry-proxy.log"), TARRY_READY)
            children.append(proxy)
            builtin = None
            if not args.no_builtin:
                builtin = Child("tarry builtin",
                                [args.tarry, "--listen", "127.0.0.1:0", *tarry_common],
                                os.path.join(work, "tarry-builtin.log"), TARRY_READY)
                children.append(builtin)
        except (RuntimeError, OSError) as e:
            print(f"h1spec: could not start: {e}", file=sys.stderr)
            return 2

        print(f"app (echo_app.js) on 127.0.0.1:{app.port}; tarry proxy on "
              f"127.0.0.1:{proxy.port} -> app"
              + (f"; tarry builtin on 127.0.0.1:{builtin.port}" if builtin else ""))

        runs["proxy"] = run_cases(("127.0.0.1", proxy.port), "tarry")
        proxy_alive = proxy.alive()
        runs["app"] = run_cases(("127.0.0.1", app.port), "node")
        if builtin:
            runs["builtin"] = run_cases(("127.0.0.1", builtin.port), "tarry")

        report("tarry --proxy -> echo app (the test)", runs["proxy"],
               verbose=args.verbose, limit=args.bytes)
        report("the echo app directly (comparison)", runs["app"],
               verbose=args.verbose, limit=args.bytes)
        if builtin:
            report("tarry's built-in answer (comparison)", runs["builtin"],
                   verbose=args.verbose, limit=args.bytes)

        required = [r for r in runs["proxy"]
                    if args.require == "all" or r["half_close"]]
        failed = [r for r in required if not r["passed"]]
        half = [r for r in runs["proxy"] if r["half_close"]]
        print(f"\nthrough the proxy: {sum(r['passed'] for r in half)}/{len(half)} half-closing "
              f"cases passed; {sum(r['passed'] for r in runs['proxy'])}/{len(runs['proxy'])} "
              f"cases in all")
        if failed:
            print("FAILED through the proxy: "
                  + "; ".join(f"{r['num']}. {r['name']}" for r in failed))
            exit_code = 1
        if not proxy_alive:
            print("the tarry proxy exited during the run:\n" + proxy.log_tail())
            exit_code = 1
    finally:
        for child in reversed(children):
            child.stop()
        for child in children:
            if child.name.startswith("tarry") and child.exit_code != 0:
                print(f"{child.name} exited with {child.exit_code} when stopped:\n"
                      f"{child.log_tail()}")
                exit_code = 1
        if args.json and runs:
            with open(args.json, "w") as f:
                json.dump({label: [{k: v for k, v in r.items() if k != "recorder"}
                                   | {"transcript": transcript(r["recorder"], args.bytes)}
                                   for r in rs] for label, rs in runs.items()}, f, indent=1)
        for name in os.listdir(work):
            os.unlink(os.path.join(work, name))
        os.rmdir(work)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
