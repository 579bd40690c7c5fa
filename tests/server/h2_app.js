// The HTTP/1.1 application behind tarry in the HTTP/2 interop and sequence tests: started as a
// child process on port 0, it prints its port and serves until killed. It counts what the
// sequences need to see from the application's side: requests held open and how each ended
// (answered, or its socket closed by the proxy first), and the sockets still open.
//   GET /hold       a head and "part", then nothing until /release (or the socket closes)
//   GET /release    ends every held answer with "done" (asked directly, not through tarry)
//   POST /upload    the body's length
//   GET /stats      {"sockets", "requests", "held", "aborted", "released"} as JSON
//   anything else   "ok"
'use strict';
const http = require('http');

const stats = { sockets: 0, requests: 0, held: 0, aborted: 0, released: 0 };
const holding = new Set();

const server = http.createServer((req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  if (path === '/stats') {
    res.end(JSON.stringify(stats));
    return;
  }
  if (path === '/release') {
    const n = holding.size;
    for (const r of holding) r.end('done');
    holding.clear();
    stats.released += n;
    res.end(String(n));
    return;
  }
  stats.requests++;
  if (path === '/hold') {
    stats.held++;
    holding.add(res);
    res.on('close', () => {
      // Closed before /release ended it: the proxy gave the request up.
      if (holding.delete(res)) stats.aborted++;
    });
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write('part');
  } else if (path === '/upload') {
    let n = 0;
    req.on('data', (c) => { n += c.length; });
    req.on('end', () => res.end(String(n)));
  } else {
    req.resume();
    req.on('end', () => res.end('ok'));
  }
});
server.on('connection', (socket) => {
  stats.sockets++;
  socket.on('close', () => { stats.sockets--; });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\n'));
