// The Node.js contender for load/compare: plain http.createServer answering every request with
// the same 13-byte "Hello, World!" (Content-Type text/plain) that tarry and nginx send.
//
//   node load/node_server.js [--host 127.0.0.1] [--port 18083]
//                            [--keep-alive-timeout-ms 3000] [--headers-timeout-ms 60000]
//
// Each flag may also come from the environment (argv wins): HOST, PORT, KEEP_ALIVE_TIMEOUT_MS,
// HEADERS_TIMEOUT_MS. Defaults: 127.0.0.1:18083, keepAliveTimeout 5000 ms (Node's own default),
// headersTimeout 60000 ms.
//
// Timeout semantics, so the comparison is read correctly:
//   - keepAliveTimeout is armed when a response finishes, as socket.setTimeout(); on expiry the
//     socket is destroyed silently. Responses advertise "Keep-Alive: timeout=floor(ms/1000)", but
//     the socket timeout is keepAliveTimeout plus a buffer, so that a client never reuses a socket
//     as the server closes it: a fixed 1000 ms in Node 20 (HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER in
//     lib/_http_server.js), server.keepAliveTimeoutBuffer (default 1000 ms) in newer releases. With
//     keepAliveTimeout 3000 this Node closes idle connections about 4 s after their last response.
//     We print the buffer on startup.
//   - headersTimeout is enforced by a sweep every connectionsCheckingInterval (30 s), so it can
//     fire up to 30 s late; it only matters for slow clients, which load/compare never sends.
//   - maxRequestsPerSocket stays 0 (unlimited), like nginx's keepalive_requests 1000000 and
//     tarry's --max-requests 0 in load/compare.
'use strict';

const http = require('http');
const { stopOnSignals } = require('./proxy.d/common');

function option(flag, envName, fallback) {
  const i = process.argv.indexOf(flag);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1];
  const prefixed = process.argv.find((a) => a.startsWith(flag + '='));
  if (prefixed) return prefixed.slice(flag.length + 1);
  if (process.env[envName] !== undefined && process.env[envName] !== '') return process.env[envName];
  return fallback;
}

function integer(text, what) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`node_server: ${what} must be a non-negative integer, got ${JSON.stringify(text)}`);
    process.exit(2);
  }
  return n;
}

const host = option('--host', 'HOST', '127.0.0.1');
const port = integer(option('--port', 'PORT', '18083'), '--port');
const keepAliveTimeout = integer(
  option('--keep-alive-timeout-ms', 'KEEP_ALIVE_TIMEOUT_MS', '5000'), '--keep-alive-timeout-ms');
const headersTimeout = integer(
  option('--headers-timeout-ms', 'HEADERS_TIMEOUT_MS', '60000'), '--headers-timeout-ms');

const body = 'Hello, World!';
const headers = { 'Content-Type': 'text/plain', 'Content-Length': 13 };

const server = http.createServer((req, res) => {
  res.writeHead(200, headers);
  res.end(body);
});

server.keepAliveTimeout = keepAliveTimeout;
server.headersTimeout = headersTimeout;
// headersTimeout must not exceed requestTimeout (300 s by default); keep the pair consistent.
if (server.requestTimeout > 0 && server.requestTimeout < headersTimeout)
  server.requestTimeout = headersTimeout;
server.maxRequestsPerSocket = 0;

server.on('clientError', (err, socket) => {
  if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
  else socket.destroy();
});

stopOnSignals(server);

server.listen({ host, port, backlog: 511 }, () => {
  const buffer = server.keepAliveTimeoutBuffer;
  console.error(
    `node_server ${process.version} pid ${process.pid} on ${host}:${port}: ` +
      `keepAliveTimeout ${keepAliveTimeout} ms, keep-alive close buffer ` +
      `${buffer === undefined ? '1000 ms (fixed in this Node)' : buffer + ' ms (keepAliveTimeoutBuffer)'}, ` +
      `headersTimeout ${headersTimeout} ms, requestTimeout ${server.requestTimeout} ms`);
});
