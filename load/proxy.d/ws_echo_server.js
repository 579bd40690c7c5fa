// The backend of load/proxy's websocket part: a WebSocket echo server on the `ws` package from npm
// (as most Node.js applications have it), the copy tests/upstream installs (npm ci there).
//
//   node load/proxy.d/ws_echo_server.js --port P [--host 127.0.0.1]
//
//   /echo     WebSocket: every message back as it came (text or binary), no permessage-deflate
//   /stats    plain HTTP: {"connections":N,"upgrades":N,"open":N,"messages":N}
//   anything else, plain HTTP: 200 "ok"
//
// Loopback only; stops on SIGTERM or SIGINT.
'use strict';

const http = require('http');
const path = require('path');

let ws;
try {
  ws = require(path.join(__dirname, '..', '..', 'tests', 'upstream', 'node_modules', 'ws'));
} catch (e) {
  console.error('ws_echo_server: no ws package in tests/upstream/node_modules (run npm ci there): ' +
                e.message);
  process.exit(2);
}

function option(flag, fallback) {
  const i = process.argv.indexOf(flag);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}
const host = option('--host', '127.0.0.1');
const port = Number(option('--port', '18281'));
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error('ws_echo_server: --port needs a port number');
  process.exit(2);
}

const stats = { connections: 0, upgrades: 0, open: 0, messages: 0 };
const wss = new ws.WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 1 << 20 });
wss.on('connection', (sock) => {
  stats.open++;
  sock.on('message', (data, binary) => {
    stats.messages++;
    sock.send(data, { binary });
  });
  sock.on('close', () => { stats.open--; });
  sock.on('error', () => {});
});

const server = http.createServer((req, res) => {
  if (req.url === '/stats') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(stats));
    return;
  }
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 2 });
  res.end('ok');
});
server.keepAliveTimeout = 60000;
server.on('connection', () => { stats.connections++; });
server.on('clientError', (err, socket) => socket.destroy());
server.on('upgrade', (req, socket, head) => {
  stats.upgrades++;
  socket.on('error', () => {});
  if (req.url !== '/echo') {
    socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    return;
  }
  wss.handleUpgrade(req, socket, head, (s) => wss.emit('connection', s, req));
});

function stop() {
  server.close();
  if (server.closeAllConnections) server.closeAllConnections();
  for (const c of wss.clients) c.terminate();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

server.listen({ host, port, backlog: 1024 }, () => {
  console.error(`ws_echo_server ${process.version} ws ${require(path.join(__dirname, '..', '..',
    'tests', 'upstream', 'node_modules', 'ws', 'package.json')).version} pid ${process.pid} on ${host}:${port}`);
});
