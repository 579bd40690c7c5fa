// The backend of load/proxy's slow part: big responses, written with backpressure.
//
//   node load/proxy.d/big_server.js --port P [--host 127.0.0.1]
//
//   GET /big?n=BYTES  200, Content-Type application/octet-stream, Content-Length BYTES, the body
//                     written 64 KiB at a time, the next chunk only once the socket took the last
//                     (res.write() returned true, or 'drain'): a reader that stops reading stops
//                     the writes, and Node holds at most one chunk per response.
//   GET /stats        JSON: {"started":N,"finished":N,"aborted":N,"open":N,"bytes":N}; bytes is
//                     what the /big responses handed to their sockets, all of them together.
//   anything else     200 "ok".
//
// Loopback only; stops on SIGTERM or SIGINT.
'use strict';

const common = require('./common');

const { host, port } = common.hostAndPort('big_server');

const CHUNK = 64 * 1024;
const MAX = 1 << 30;
const chunk = Buffer.alloc(CHUNK, 'x');
const stats = { started: 0, finished: 0, aborted: 0, open: 0, bytes: 0 };

function big(res, n) {
  stats.started++;
  stats.open++;
  let left = n;
  let done = false;
  const finish = (aborted) => {
    if (done) return;
    done = true;
    stats.open--;
    if (aborted) stats.aborted++;
    else stats.finished++;
  };
  res.on('close', () => finish(left > 0 || !res.writableFinished));
  res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': n });
  const pump = () => {
    while (left > 0 && !done) {
      const piece = left >= CHUNK ? chunk : chunk.subarray(0, left);
      left -= piece.length;
      stats.bytes += piece.length;
      if (!res.write(piece)) {
        res.once('drain', pump);
        return;
      }
    }
    if (left === 0 && !done) res.end();
  };
  pump();
}

const server = common.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/big') {
    const n = Number(url.searchParams.get('n') || '1048576');
    if (!Number.isInteger(n) || n < 0 || n > MAX) {
      res.writeHead(400, { 'Content-Type': 'text/plain' });
      res.end(`n must be 0..${MAX}\n`);
      return;
    }
    big(res, n);
    return;
  }
  if (url.pathname === '/stats') {
    common.sendJson(res, stats);
    return;
  }
  common.sendOk(res);
});
server.headersTimeout = 60000;
server.requestTimeout = 0;
server.maxRequestsPerSocket = 0;
common.stopOnSignals(server);
common.listen(server, host, port, `big_server ${process.version}`);
