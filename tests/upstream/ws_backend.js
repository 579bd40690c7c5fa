// A WebSocket application behind the proxy in tests/upstream (the `ws` package from npm, as most
// Node.js applications use it), started as a child process on port 0: it prints its port and
// serves until killed.
//   /echo       WebSocket: every message back as it came (text or binary); pings answered by ws
//   /refuse     an upgrade refused with 403: an ordinary response to an upgrade request
//   /raw        Upgrade: tarry-raw, by Node's own upgrade event: a byte stream echoed back; when
//               the client half-closes, "bye:N" (N bytes received) and the server's half-close
//   /stats      plain HTTP: {"connections":N,"upgrades":N,"open":N}
//   anything else, plain HTTP: 200 "plain <method> <url> upgrade=<Upgrade field or none>"
'use strict';
const http = require('http');
const { WebSocketServer } = require('ws');

const stats = { connections: 0, upgrades: 0, open: 0 };
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
