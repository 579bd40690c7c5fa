// The application behind the proxy in tests/upstream: started as a child process on port 0,
// it prints its port and serves until killed. argv[2]: keepAliveTimeout in ms (default 5000);
// argv[3], if given: a unix socket path to listen on instead (it then prints 0).
'use strict';
const http = require('http');

const stats = { connections: 0, requests: 0, posts: 0 };

function body(req, done) {
  let n = 0;
  const parts = [];
  req.on('data', (c) => { n += c.length; if (parts.length < 64) parts.push(c); });
  req.on('end', () => done(n, Buffer.concat(parts)));
}

const server = http.createServer((req, res) => {
  stats.requests++;
  if (req.method === 'POST') stats.posts++;
  const url = new URL(req.url, 'http://x');
  const path = url.pathname;
  if (path === '/headers') {
    // The fields as they arrived, one "name: value" line each.
    let text = '';
    for (let i = 0; i < req.rawHeaders.length; i += 2)
      text += req.rawHeaders[i].toLowerCase() + ': ' + req.rawHeaders[i + 1] + '\n';
    res.setHeader('Content-Type', 'text/plain');
    res.setHeader('X-Hop', 'secret');
    res.setHeader('Connection', 'X-Hop');
    res.end(text);
  } else if (path === '/echo') {
    // Streams the request body back (chunked), with backpressure.
    res.setHeader('Content-Type', 'application/octet-stream');
    req.pipe(res);
  } else if (path === '/upload') {
    body(req, (n) => res.end(String(n)));
  } else if (path === '/big') {
    const total = Number(url.searchParams.get('n'));
    const piece = Buffer.alloc(64 * 1024, 'x');
    res.setHeader('Content-Length', total);
    let left = total;
    const more = () => {
      while (left > 0) {
        const n = Math.min(left, piece.length);
        left -= n;
        if (!res.write(n === piece.length ? piece : piece.subarray(0, n))) {
          res.once('drain', more);
          return;
        }
      }
      res.end();
    };
    more();
  } else if (path === '/early') {
    // The answer at once, before the request body has come; the body is then read and dropped
    // (an upload refused on its headers, as many applications do).
    res.writeHead(200, { 'Content-Length': 6 });
    res.end('early\n');
    req.resume();
  } else if (path === '/api/hello') {
    // What most applications do: a head with no length, then the whole JSON at once (Node
    // sends it chunked).
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ message: 'hello from the application', items: [1, 2, 3],
      note: 'a JSON answer without Content-Length' }));
  } else if (path === '/stream') {
    // n bytes in 16 KiB writes, no Content-Length: chunked, or to the close for HTTP/1.0.
    let left = Number(url.searchParams.get('n'));
    const piece = Buffer.alloc(16 * 1024, 'y');
    const more = () => {
      while (left > 0) {
        const n = Math.min(left, piece.length);
        left -= n;
        if (!res.write(n === piece.length ? piece : piece.subarray(0, n))) {
          res.once('drain', more);
          return;
        }
      }
      res.end();
    };
    res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
    more();
  } else if (path === '/slow') {
    setTimeout(() => res.end('slow'), Number(url.searchParams.get('ms')));
  } else if (path === '/chunked') {
    res.write('one,');
    setTimeout(() => { res.write('two,'); res.end('three'); }, 20);
  } else if (path === '/stall') {
    // A head and a first piece, then silence.
    res.write('part');
    setTimeout(() => res.end(), 5000);
  } else if (path === '/close') {
    res.setHeader('Connection', 'close');
    res.end('closing');
  } else if (path === '/stats') {
    res.end(JSON.stringify(stats));
  } else {
    body(req, () => res.end('ok'));
  }
});
server.keepAliveTimeout = Number(process.argv[2] || 5000);
server.on('connection', () => { stats.connections++; });
if (process.argv[3]) {
  server.listen(process.argv[3], () => process.stdout.write('0\n'));
} else {
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(server.address().port + '\n');
  });
}
