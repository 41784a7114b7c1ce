import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that nothing listens on now: for a server started
 * at a known URL (and restarted at the same one), or for a URL whose
 * connections are refused.
 */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
