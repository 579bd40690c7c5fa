// Node.js https with a keep-alive agent against tarry, for tls_interop_test. Prints one JSON
// object: how many of N requests got 200 with the body the file has, over how many sockets.
//   node node_client.js PORT CA N MAX_SOCKETS
// GET /file-<i % 10>.txt, whose body is "file <i % 10>\n" repeated 100 times.
'use strict';
const https = require('https');
const fs = require('fs');

const [port, caFile, total, maxSockets] = process.argv.slice(2);
const n = Number(total);
const agent = new https.Agent({ keepAlive: true, maxSockets: Number(maxSockets) });
const ca = fs.readFileSync(caFile);
const sockets = new Set();
const result = { ok: 0, bad: [], sockets: 0, versions: [], alpn: [] };

function expected(k) {
  return `file ${k}\n`.repeat(100);
}

function one(i) {
  return new Promise((resolve) => {
    const k = i % 10;
    const req = https.request({
      host: '127.0.0.1', port: Number(port), path: `/file-${k}.txt`, servername: 'localhost',
      ca, agent, ALPNProtocols: ['http/1.1'], timeout: 10000,
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        if (res.statusCode === 200 && body === expected(k)) result.ok++;
        else result.bad.push([i, res.statusCode, body.slice(0, 60)]);
        resolve();
      });
    });
    req.on('socket', (s) => {
      if (!sockets.has(s)) {
        sockets.add(s);
        s.on('secureConnect', () => {
          result.versions.push(s.getProtocol());
          result.alpn.push(s.alpnProtocol);
        });
      }
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => { result.bad.push([i, 'error', String(e)]); resolve(); });
    req.end();
  });
}

Promise.all(Array.from({ length: n }, (_, i) => one(i))).then(() => {
  result.sockets = sockets.size;
  agent.destroy();
  console.log(JSON.stringify(result));
});
