// The Node.js peer of the http rows: Node's own `http` module (libuv + llhttp, one thread),
// answering every request with the same 13-byte body as the other servers.
//     node node-hello.js PORT
'use strict';
const http = require('http');
const body = Buffer.from('Hello, World!');
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 60000;
server.listen(Number(process.argv[2] || 0), '127.0.0.1', () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});
for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => process.exit(0));
