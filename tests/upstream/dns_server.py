#!/usr/bin/python3
"""A DNS server for tests, on loopback UDP, whose answers the test changes while it runs.

Usage: dns_server.py ZONE_FILE. It binds 127.0.0.1 on a free port, prints the port on a line
of its own, and answers until killed. ZONE_FILE is JSON, read again whenever it changes (write
it whole and rename it into place):

    {"mode": "answer", "ttl": 0, "names": {"app.test": ["127.0.0.2", "::1"]}}

mode "answer" answers A and AAAA from `names` (a name it does not list: NXDOMAIN), "silent"
answers nothing at all (a DNS server that is down), "servfail" answers SERVFAIL. Each query is
counted in ZONE_FILE + ".queries" (the count, rewritten), for tests that wait for a lookup.
"""
import ipaddress
import json
import os
import socket
import sys

from dnslib import AAAA, QTYPE, RCODE, RR, A, DNSRecord


def main():
    zone_path = sys.argv[1]
    zone, zone_mtime = {}, None
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    queries = 0
    while True:
        data, peer = sock.recvfrom(4096)
        try:
            mtime = os.stat(zone_path).st_mtime_ns
            if mtime != zone_mtime:
                with open(zone_path) as f:
                    zone, zone_mtime = json.load(f), mtime
        except (OSError, ValueError):
            pass
        queries += 1
        tmp = zone_path + ".queries.tmp"
        with open(tmp, "w") as f:
            f.write(str(queries))
        os.replace(tmp, zone_path + ".queries")
        mode = zone.get("mode", "answer")
        if mode == "silent":
            continue
        try:
            request = DNSRecord.parse(data)
        except Exception:
            continue
        reply = request.reply()
        if mode == "servfail":
            reply.header.rcode = RCODE.SERVFAIL
            sock.sendto(reply.pack(), peer)
            continue
        name = str(request.q.qname).rstrip(".").lower()
        names = {k.rstrip(".").lower(): v for k, v in zone.get("names", {}).items()}
        ttl = int(zone.get("ttl", 0))
        if name not in names:
            reply.header.rcode = RCODE.NXDOMAIN
        else:
            for text in names[name]:
                address = ipaddress.ip_address(text)
                if address.version == 4 and request.q.qtype == QTYPE.A:
                    reply.add_answer(RR(request.q.qname, QTYPE.A, rdata=A(text), ttl=ttl))
                elif address.version == 6 and request.q.qtype == QTYPE.AAAA:
                    reply.add_answer(RR(request.q.qname, QTYPE.AAAA, rdata=AAAA(text), ttl=ttl))
        sock.sendto(reply.pack(), peer)


if __name__ == "__main__":
    main()
