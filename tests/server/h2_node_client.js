// Node.js's http2 client against tarry, for tests/server/h2_interop_test.cpp: one session
// (h2c with prior knowledge for http://, ALPN h2 for https://, the test CA trusted), requests
// on it at once, then a JSON line of what came back.
//   node h2_node_client.js ORIGIN CA get N PATH     N GETs of PATH at once
//   node h2_node_client.js ORIGIN CA post SIZE PATH  a POST of SIZE bytes, streamed in 16 KB
//                                                     writes with backpressure
// ORIGIN is http://127.0.0.1:PORT or https://127.0.0.1:PORT (the certificate names the address);
// CA is the test CA's PEM file ("-" for none). Prints {"alpn", "sessions", "answers": [{status, length,
// body}], "errors": []}.
'use strict';
const fs = require('fs');
const http2 = require('http2');

const [origin, ca, mode, count, path] = process.argv.slice(2);
const options = {};
if (ca !== '-') options.ca = fs.readFileSync(ca);

const result = { alpn: null, sessions: 0, answers: [], errors: [] };
const session = http2.connect(origin, options);
session.on('connect', (s) => {
  result.sessions++;
  result.alpn = s.alpnProtocol || null;
});
session.on('error', (e) => result.errors.push('session: ' + e.message));

function request(headers, body) {
  return new Promise((resolve) => {
    const req = session.request(headers, { endStream: body === undefined });
    const chunks = [];
    let status = 0;
    req.on('response', (h) => { status = h[':status']; });
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const all = Buffer.concat(chunks);
      resolve({ status, length: all.length, body: all.subarray(0, 64).toString() });
    });
    req.on('error', (e) => {
      result.errors.push(e.message);
      resolve({ status: 0, length: 0, body: '' });
    });
    if (body !== undefined) {
      // The request body as the stream's window lets it go: write() says when to wait.
      let left = body;
      const piece = Buffer.alloc(16 * 1024, 'x');
      const more = () => {
        while (left > 0) {
          const n = Math.min(left, piece.length);
          left -= n;
          const last = left === 0;
          const ok = req.write(n === piece.length ? piece : piece.subarray(0, n));
          if (last) { req.end(); return; }
          if (!ok) { req.once('drain', more); return; }
        }
      };
      more();
    }
  });
}

async function main() {
  const n = Number(count);
  if (mode === 'get') {
    const all = [];
    for (let i = 0; i < n; i++) all.push(request({ ':method': 'GET', ':path': path }));
    result.answers = await Promise.all(all);
  } else if (mode === 'post') {
    result.answers = [await request({ ':method': 'POST', ':path': path,
      'content-type': 'application/octet-stream', 'content-length': String(n) }, n)];
  }
  session.close(() => {
    process.stdout.write(JSON.stringify(result) + '\n');
  });
}
main();
