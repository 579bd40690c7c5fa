// What the Node.js backends of load/proxy share: big_server.js and ws_echo_server.js here, and the
// stop on a signal also load/node_server.js.
//
//   const common = require('./common');
//   const { host, port } = common.hostAndPort('big_server');  // --host, --port
//   const server = common.createServer((req, res) => { ... common.sendOk(res); });
//   common.stopOnSignals(server);
//   common.listen(server, host, port, `big_server ${process.version}`);
'use strict';

const http = require('http');

// The argument after `flag` in argv, or `fallback`.
function option(flag, fallback) {
  const i = process.argv.indexOf(flag);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

// --host (default 127.0.0.1) and --port (default 18281); a port that is not 1..65535 ends the
// process with status 2 and "NAME: --port needs a port number".
function hostAndPort(name) {
  const host = option('--host', '127.0.0.1');
  const port = Number(option('--port', '18281'));
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    console.error(`${name}: --port needs a port number`);
    process.exit(2);
  }
  return { host, port };
}

// An HTTP server for `handler` that keeps an idle client connection 60 s and drops a client that
// sends what is not HTTP.
function createServer(handler) {
  const server = http.createServer(handler);
  server.keepAliveTimeout = 60000;
  server.on('clientError', (err, socket) => socket.destroy());
  return server;
}

// 200 with `value` as JSON.
function sendJson(res, value) {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(value));
}

// 200 "ok".
function sendOk(res) {
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 2 });
  res.end('ok');
}

// On SIGTERM or SIGINT: closes `server` and every connection it has, runs `beforeExit` (if any),
// and exits 0.
function stopOnSignals(server, beforeExit) {
  const stop = () => {
    server.close();
    if (server.closeAllConnections) server.closeAllConnections();
    if (beforeExit) beforeExit();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

// Listens on host:port (backlog 1024) and then prints "LABEL pid PID on HOST:PORT" on stderr.
function listen(server, host, port, label) {
  server.listen({ host, port, backlog: 1024 }, () => {
    console.error(`${label} pid ${process.pid} on ${host}:${port}`);
  });
}

module.exports = { hostAndPort, createServer, sendJson, sendOk, stopOnSignals, listen };
