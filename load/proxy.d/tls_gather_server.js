// The HTTPS backend of load/proxy's tls part, memory half: holds requests until enough of them
// wait at once, so that the proxy has that many upstream TLS connections open together, then
// keeps every connection open (no keep-alive timeout), so that they stay in the proxy's pool.
//   node tls_gather_server.js --port P --cert CERT --key KEY
//   GET /gather?n=N&ms=MAX   answered "ok" once N requests are held, or after MAX ms
//   GET /stats               {"connections":..,"open":..,"held":..,"requests":..}
//   anything else            "ok" at once
'use strict';
const fs = require('fs');
const https = require('https');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
};
const stats = { connections: 0, open: 0, held: 0, requests: 0 };
let held = [];

const release = () => {
  const waiting = held;
  held = [];
  stats.held = 0;
  for (const w of waiting) {
    clearTimeout(w.timer);
    w.res.end('ok');
  }
};

const server = https.createServer(
  { cert: fs.readFileSync(arg('cert')), key: fs.readFileSync(arg('key')) },
  (req, res) => {
    stats.requests++;
    const url = new URL(req.url, 'https://x');
    if (url.pathname === '/stats') {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify(stats));
    } else if (url.pathname === '/gather') {
      const w = { res };
      w.timer = setTimeout(release, Number(url.searchParams.get('ms') || 30000));
      held.push(w);
      stats.held = held.length;
      if (held.length >= Number(url.searchParams.get('n') || 1)) release();
    } else {
      res.end('ok');
    }
  });
// The proxy's pool decides when an idle connection closes, not this backend.
server.keepAliveTimeout = 0;
server.headersTimeout = 0;
server.requestTimeout = 0;
server.on('secureConnection', (socket) => {
  stats.connections++;
  stats.open++;
  socket.on('close', () => stats.open--);
});
server.listen({ host: '127.0.0.1', port: Number(arg('port', 18290)), backlog: 4096 }, () => {
  process.stdout.write(`listening on ${server.address().port}\n`);
});
