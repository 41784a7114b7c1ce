/**
 * The limit for a multi-core server: bare node:http under node:cluster, N
 * workers (argv[2], default 2) each answering a counter as text, sharing one
 * port the way `sequoia serve --workers N` does (round-robin, primary-picked
 * port). Prints `LISTENING <url>` once every worker listens.
 */
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';

if (cluster.isPrimary) {
  const n = Number(process.argv[2] ?? 2);
  const probe = createNetServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const a = probe.address();
  const port = typeof a === 'object' && a ? a.port : 0;
  await new Promise((r) => probe.close(r));
  let up = 0;
  for (let i = 0; i < n; i++) {
    const w = cluster.fork({ BARE_PORT: String(port) });
    w.on('listening', () => {
      if (++up === n) console.log(`LISTENING http://127.0.0.1:${port}`);
    });
  }
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    setTimeout(() => process.exit(0), 200).unref();
    cluster.on('exit', () => {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
    });
  });
} else {
  let n = 0;
  const server = createServer((_req, res) => {
    const body = String(++n);
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': body.length });
    res.end(body);
  });
  server.keepAliveTimeout = 65_000;
  server.listen(Number(process.env.BARE_PORT), '127.0.0.1');
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}
