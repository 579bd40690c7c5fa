// The HTTPS application behind the proxy in proxy_tls_test: keep-alive on, its TLS connections
// and resumed sessions counted (/stats). argv: CERT KEY [CLIENT_CA|-] [PORT]; with CLIENT_CA it
// asks for a client certificate and refuses a connection without one that verifies. It prints
// its port once it listens and serves until killed.
'use strict';
const fs = require('fs');
const https = require('https');

const [cert, key, clientCa, port] = process.argv.slice(2);
const stats = { connections: 0, resumed: 0, requests: 0 };

const options = { cert: fs.readFileSync(cert), key: fs.readFileSync(key) };
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
  } else if (url.pathname === '/alpn') {
    res.end(String(req.socket.alpnProtocol));
  } else {
    res.setHeader('Content-Type', 'text/plain');
    res.end('hello over TLS');
  }
});
server.keepAliveTimeout = 5000;
server.on('secureConnection', (socket) => {
  stats.connections++;
  if (socket.isSessionReused()) stats.resumed++;
});
server.listen(Number(port || 0), '127.0.0.1', () => {
  process.stdout.write(server.address().port + '\n');
});
