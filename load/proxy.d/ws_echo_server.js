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

const path = require('path');
const common = require('./common');

let ws;
try {
  ws = require(path.join(__dirname, '..', '..', 'tests', 'upstream', 'node_modules', 'ws'));
} catch (e) {
  console.error('ws_echo_server: no ws package in tests/upstream/node_modules (run npm ci there): ' +
                e.message);
  process.exit(2);
}

const { host, port } = common.hostAndPort('ws_echo_server');

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

const server = common.createServer((req, res) => {
  if (req.url === '/stats') {
    common.sendJson(res, stats);
    return;
  }
  common.sendOk(res);
});
server.on('connection', () => { stats.connections++; });
server.on('upgrade', (req, socket, head) => {
  stats.upgrades++;
  socket.on('error', () => {});
  if (req.url !== '/echo') {
    socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    return;
  }
  wss.handleUpgrade(req, socket, head, (s) => wss.emit('connection', s, req));
});

common.stopOnSignals(server, () => {
  for (const c of wss.clients) c.terminate();
});
common.listen(server, host, port, `ws_echo_server ${process.version} ws ${require(path.join(
  __dirname, '..', '..', 'tests', 'upstream', 'node_modules', 'ws', 'package.json')).version}`);
