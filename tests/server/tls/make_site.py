#!/usr/bin/env python3
"""A small web page with its assets, for Chromium in tls_interop_test.

  make_site.py DIR

index.html links style.css, app.js, photo.png, logo.svg and pattern.png (a CSS background);
app.js requests data.json and writes it into the page, so its request proves the script ran.
"""
import os
import struct
import sys
import zlib


def png(width, height, pixel):
    """An RGB PNG whose pixel (x, y) is pixel(x, y) -> (r, g, b)."""
    rows = b"".join(
        b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


FILES = {
    "index.html": b"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>tarry over TLS</title>
<link rel="stylesheet" href="/style.css">
<link rel="icon" href="/logo.svg">
<script src="/app.js" defer></script>
</head><body>
<h1>tarry over TLS</h1>
<img id="photo" src="/photo.png" width="256" height="128" alt="photo">
<img id="logo" src="/logo.svg" width="128" height="128" alt="logo">
<div id="pattern"></div>
<p id="data">waiting for data.json</p>
</body></html>
""",
    "style.css": b"""body { background: #fdf6e3; font-family: sans-serif; margin: 24px; }
h1 { color: #b58900; }
#pattern { width: 320px; height: 96px; background: url(/pattern.png) repeat; }
#data { font-size: 20px; color: #268bd2; }
""",
    "app.js": b"""// A synchronous request: done before the load event, so a screenshot or a DOM dump
// taken at it shows the result.
const xhr = new XMLHttpRequest();
xhr.open('GET', '/data.json', false);
xhr.send();
const d = JSON.parse(xhr.responseText);
document.getElementById('data').textContent = d.message;
document.title = 'loaded: ' + d.message;
""",
    "data.json": b'{"message": "fetched over TLS by app.js"}\n',
    "logo.svg": b"""<svg xmlns="http://www.w3.org/2000/svg" width="128" height="128">
<circle cx="64" cy="64" r="56" fill="#d33682"/><rect x="40" y="40" width="48" height="48"
fill="#2aa198"/></svg>
""",
    "photo.png": png(256, 128, lambda x, y: (x, y * 2 % 256, (x * y) % 256)),
    "pattern.png": png(16, 16, lambda x, y: (255, 255, 255) if (x // 4 + y // 4) % 2 else (40, 40, 160)),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in FILES.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
