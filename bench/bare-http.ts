/** The limit for HTTP: a bare node:http server answering a counter as text, or N numbers as JSON. */
import { createServer } from 'node:http';

let n = 0;
const server = createServer((req, res) => {
  const url = req.url ?? '';
  if (url.startsWith('/batch')) {
    const ids: string[] = [];
    for (let i = 0; i < 1000; i++) ids.push(String(++n));
    const body = `{"tag":"bench","ids":["${ids.join('","')}"]}`;
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  const body = String(++n);
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  if (a && typeof a === 'object') console.log(`LISTENING http://127.0.0.1:${a.port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
