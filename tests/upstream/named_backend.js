// An application that says who it is, for the tests of upstream servers by name
// (upstream_names_test.cpp): argv[2] the address to listen on ("127.0.0.2", "::1"), argv[3] the
// port (0: any), argv[4] its label. It prints its port once it listens, answers every request
// with its label (/slow?ms=N: after N ms), and serves until killed.
'use strict';
const http = require('http');

const [host, port, label] = process.argv.slice(2);
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const answer = () => {
    res.setHeader('Content-Type', 'text/plain');
    res.end(label);
  };
  req.resume();
  req.on('end', () => {
    if (url.pathname === '/slow') setTimeout(answer, Number(url.searchParams.get('ms')));
    else answer();
  });
});
server.keepAliveTimeout = 30000;
server.listen(Number(port), host, () => process.stdout.write(server.address().port + '\n'));
