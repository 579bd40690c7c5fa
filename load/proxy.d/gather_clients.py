#!/usr/bin/env python3
"""N clients at once, each one GET (Connection: close) through the proxy, read to its end.

load/proxy's tls part: with the backend's /gather?n=N, every request is held until all N are at
the backend, so the proxy opens N upstream connections together. Prints "answered A of N" (A: the
responses with status 200) and "seconds S".
"""
import argparse
import asyncio
import time


async def one(host, port, path, results):
    try:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        data = await reader.read()  # to the end: the proxy closes after the response
        writer.close()
        results.append(data.startswith(b"HTTP/1.1 200"))
    except OSError:
        results.append(False)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--target", required=True, help="HOST:PORT")
    p.add_argument("--connections", type=int, required=True)
    p.add_argument("--path", required=True)
    a = p.parse_args()
    host, port = a.target.rsplit(":", 1)
    results = []
    start = time.monotonic()
    tasks = []
    for i in range(a.connections):
        tasks.append(asyncio.create_task(one(host, int(port), a.path, results)))
        if i % 100 == 99:
            await asyncio.sleep(0.01)  # the listener's backlog, and the proxy's accept pace
    await asyncio.gather(*tasks)
    print(f"answered {sum(results)} of {a.connections}")
    print(f"seconds {time.monotonic() - start:.2f}")


asyncio.run(main())
