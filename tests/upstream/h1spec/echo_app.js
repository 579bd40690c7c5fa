// The application behind tarry for the h1spec run: a plain `http` server on 127.0.0.1, port 0
// (or argv[2]), that prints "PORT\n" once listening and serves until killed.
//
// Every request it is handed is answered 200 with "METHOD TARGET HTTP/x.y\n\n" + the body, and
// X-Echo-App: 1. It rejects nothing on purpose (no Host requirement), so that a 4xx seen through
// the proxy can be told apart: one without X-Echo-App came from tarry. What Node's own parser
// refuses is answered 400 with X-Echo-App: client-error (the clientError hook below), and a
// CONNECT it is handed gets 405 with X-Echo-App: connect (it opens no tunnel).
'use strict';
const http = require('http');

const server = http.createServer({ requireHostHeader: false }, (req, res) => {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    const body = Buffer.concat([
      Buffer.from(`${req.method} ${req.url} HTTP/${req.httpVersion}\n\n`),
      Buffer.concat(parts),
    ]);
    res.writeHead(200, {
      'Content-Type': 'text/plain',
      'Content-Length': body.length,
      'X-Echo-App': '1',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
});

server.on('connect', (req, socket) => {
  socket.end('HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD, POST, OPTIONS\r\n' +
             'X-Echo-App: connect\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
});

server.on('clientError', (err, socket) => {
  if (socket.writable && !socket.destroyed) {
    const text = `${err.code || 'error'}\n`;
    socket.end('HTTP/1.1 400 Bad Request\r\nX-Echo-App: client-error\r\n' +
               `Content-Type: text/plain\r\nContent-Length: ${text.length}\r\n` +
               `Connection: close\r\n\r\n${text}`);
  } else {
    socket.destroy();
  }
});

const port = Number(process.argv[2] || 0);
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`${server.address().port}\n`);
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => { server.close(); process.exit(0); });
}
