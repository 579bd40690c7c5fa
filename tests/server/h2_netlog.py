#!/usr/bin/python3
"""What a Chromium net log (--log-net-log=FILE --net-log-capture-mode=Default) says of the HTTP/2
sessions a page load opened, for tests/server/h2_interop_test.cpp.

  h2_netlog.py FILE   prints one line per HTTP/2 session, "session <host> <protocol> <streams>"
                      (streams: the requests whose HEADERS it sent), then "h2_requests <n>" and
                      "h1_requests <n>" (requests sent as HTTP/2, and as HTTP/1.x), then
                      "connects <n>" (TCP connections Chromium opened)

The event and source types are numbers in the log, named in its "constants" table.
"""
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        log = json.load(f)
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    BEGIN = log["constants"]["logEventPhase"]["PHASE_BEGIN"]
    sessions = {}  # source id -> [host, protocol, streams]
    counts = {"h2_requests": 0, "h1_requests": 0, "connects": 0}
    for e in log["events"]:
        kind = names.get(e["type"], "")
        source = e["source"]["id"]
        params = e.get("params", {})
        if kind == "HTTP2_SESSION" and e.get("phase") == BEGIN:
            sessions[source] = [params.get("host", "?"), "?", 0]
        elif kind == "HTTP2_SESSION_INITIALIZED" and source in sessions:
            sessions[source][1] = params.get("protocol", "?")
        elif kind == "HTTP2_SESSION_SEND_HEADERS" and source in sessions:
            sessions[source][2] += 1
        elif kind == "HTTP_TRANSACTION_HTTP2_SEND_REQUEST_HEADERS":
            counts["h2_requests"] += 1
        elif kind == "HTTP_TRANSACTION_SEND_REQUEST_HEADERS":
            counts["h1_requests"] += 1
        elif kind == "TCP_CONNECT" and e.get("phase") == BEGIN:
            counts["connects"] += 1
    for host, protocol, streams in sessions.values():
        print("session", host, protocol, streams)
    for k in ("h2_requests", "h1_requests", "connects"):
        print(k, counts[k])


if __name__ == "__main__":
    main()
