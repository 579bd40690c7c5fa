// A WebSocket application behind the proxy in tests/upstream (the `ws` package from npm, as most
// Node.js applications use it), started as a child process on port 0: it prints its port and
// serves until killed.
//   /echo       WebSocket: every message back as it came (text or binary); pings answered by ws
//   /refuse     an upgrade refused with 403: an ordinary response to an upgrade request
//   /flood?n=N  Upgrade: tarry-raw: N bytes down while what comes up is counted; "got:N" at the end
//   /raw        Upgrade: tarry-raw, by Node's own upgrade event: a byte stream echoed back; when
//               the client half-closes, "bye:N" (N bytes received) and the server's half-close
//   /first      Upgrade: tarry-raw: "first" and the application's half-close at once; it reads
//               on, and when the client half-closes, the bytes that came up are "after_end" in
//               /stats
//   /stats      plain HTTP: {"connections":N,"upgrades":N,"open":N,"after_end":N}
//   /forwarded  plain HTTP: "proto=<X-Forwarded-Proto> host=<X-Forwarded-Host>" (what an
//               application behind a proxy builds its own URLs from)
//   anything else, plain HTTP: 200 "plain <method> <url> upgrade=<Upgrade field or none>"
'use strict';
const http = require('http');
const { WebSocketServer } = require('ws');

const stats = { connections: 0, upgrades: 0, open: 0, after_end: -1 };
const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });

wss.on('connection', (ws) => {
  stats.open++;
  ws.on('message', (data, binary) => ws.send(data, { binary }));
  ws.on('close', () => { stats.open--; });
  ws.on('error', () => {});
});

const server = http.createServer((req, res) => {
  if (req.url === '/stats') {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(stats));
    return;
  }
  res.setHeader('Content-Type', 'text/plain');
  if (req.url === '/forwarded') {
    res.end(`proto=${req.headers['x-forwarded-proto']} host=${req.headers['x-forwarded-host']}`);
    return;
  }
  res.end(`plain ${req.method} ${req.url} upgrade=${req.headers.upgrade || 'none'}`);
});
server.on('connection', () => { stats.connections++; });

server.on('upgrade', (req, socket, head) => {
  stats.upgrades++;
  socket.on('error', () => {});
  if (req.url === '/refuse') {
    socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 7\r\nConnection: close\r\n\r\nrefused');
    return;
  }
  if (req.url.startsWith('/flood?')) {
    // Sends n bytes down (with backpressure) while counting what comes up: the two directions
    // independent, as a streaming application has them. After the client half-closes and the
    // n bytes are out: "got:N" and the server's half-close.
    let left = Number(new URL(req.url, 'http://x').searchParams.get('n'));
    let up = head.length;
    let ended = false;
    const piece = Buffer.alloc(64 * 1024, 'd');
    const finish = () => { if (ended && left === 0) socket.end(`got:${up}`); };
    const more = () => {
      while (left > 0) {
        const n = Math.min(left, piece.length);
        left -= n;
        if (!socket.write(n === piece.length ? piece : piece.subarray(0, n))) {
          socket.once('drain', more);
          return;
        }
      }
      finish();
    };
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: tarry-raw\r\nConnection: Upgrade\r\n\r\n');
    socket.on('data', (d) => { up += d.length; });
    socket.on('end', () => { ended = true; finish(); });
    more();
    return;
  }
  if (req.url === '/first') {
    let n = head.length;
    socket.allowHalfOpen = true;
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: tarry-raw\r\nConnection: Upgrade\r\n\r\n');
    socket.end('first');
    socket.on('data', (d) => { n += d.length; });
    socket.on('end', () => { stats.after_end = n; socket.destroy(); });
    return;
  }
  if (req.url === '/raw') {
    let n = head.length;
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: tarry-raw\r\nConnection: Upgrade\r\n\r\n');
    if (head.length) socket.write(head);
    socket.allowHalfOpen = true;
    socket.on('data', (d) => {
      n += d.length;
      if (!socket.write(d)) socket.pause(); // backpressure, as a real application has it
    });
    socket.on('drain', () => socket.resume());
    socket.on('end', () => socket.end(`bye:${n}`));
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${server.address().port}\n`);
});
