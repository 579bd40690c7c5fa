// The HTTPS application behind the proxy in proxy_tls_test: keep-alive on, its TLS connections
// and resumed sessions counted (/stats). argv: CERT KEY [CLIENT_CA|-] [PORT]; with CLIENT_CA it
// asks for a client certificate and refuses a connection without one that verifies; MAX_VERSION
// (TLSv1.2) caps the protocol. /echo answers the request's body, /big?n= n bytes, /chunks?n=&size=
// a chunked body in n records; an upgrade is accepted (101) and echoes what comes, its end
// answered with the end. It prints its port once it listens and serves until killed.
'use strict';
const fs = require('fs');
const https = require('https');

const [cert, key, clientCa, port, maxVersion] = process.argv.slice(2);
const stats = { connections: 0, resumed: 0, requests: 0 };

const options = { cert: fs.readFileSync(cert), key: fs.readFileSync(key) };
if (maxVersion) options.maxVersion = maxVersion;
if (clientCa && clientCa !== '-') {
  options.ca = fs.readFileSync(clientCa);
  options.requestCert = true;
  options.rejectUnauthorized = true;
}

const server = https.createServer(options, (req, res) => {
  stats.requests++;
  const url = new URL(req.url, 'https://x');
  if (url.pathname === '/stats') {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(stats));
  } else if (url.pathname === '/servername') {
    res.end(String(req.socket.servername));
  } else if (url.pathname === '/peer') {
    const peer = req.socket.getPeerCertificate();
    res.end(peer && peer.subject ? peer.subject.CN : '-');
  } else if (url.pathname === '/slow') {
    setTimeout(() => res.end('slow'), Number(url.searchParams.get('ms') || 100));
  } else if (url.pathname === '/echo') {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', () => res.end(Buffer.concat(parts)));
  } else if (url.pathname === '/big') {
    res.setHeader('Content-Type', 'application/octet-stream');
    res.end(Buffer.alloc(Number(url.searchParams.get('n') || 0), 'x'));
  } else if (url.pathname === '/chunks') {
    // n chunks of `size` bytes, each written on a later turn of the loop: each its own TLS
    // record and its own chunk of the chunked body ('a'..'z', a letter per chunk).
    const n = Number(url.searchParams.get('n') || 1);
    const size = Number(url.searchParams.get('size') || 1);
    let i = 0;
    const next = () => {
      if (i === n) return res.end();
      res.write(Buffer.alloc(size, String.fromCharCode(97 + (i++ % 26))));
      setImmediate(next);
    };
    next();
  } else if (url.pathname === '/version') {
    res.end(String(req.socket.getProtocol()));
  } else if (url.pathname === '/alpn') {
    res.end(String(req.socket.alpnProtocol));
  } else {
    res.setHeader('Content-Type', 'text/plain');
    res.end('hello over TLS');
  }
});
server.keepAliveTimeout = 5000;
server.on('upgrade', (req, socket) => {
  socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n');
  socket.pipe(socket); // the end of the client's bytes ends ours, once they are echoed
});
server.on('secureConnection', (socket) => {
  stats.connections++;
  if (socket.isSessionReused()) stats.resumed++;
});
server.listen(Number(port || 0), '127.0.0.1', () => {
  process.stdout.write(server.address().port + '\n');
});
