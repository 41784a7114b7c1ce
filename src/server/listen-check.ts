/**
 * Start-up order: the port is bound before anything else is taken (a store
 * connection, a snowflake worker-id lease), so a port in use fails at once,
 * in one line naming the flag to change, and leases nothing. Before even
 * that, app/config.ts asks `isLoopbackHost` whether the server may run
 * without an admin token (DESIGN.md, "Safe as shipped").
 */
import { BlockList, createServer, isIP } from 'node:net';

/** A start-up failure the operator fixes with a flag: `message` starts with the code. */
export class StartupError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = 'StartupError';
  }
}

/** Node's listen errors in words, with the flag that fixes them. */
export function listenError(e: unknown, host: string, port: number): Error {
  const code = (e as NodeJS.ErrnoException).code;
  const at = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  switch (code) {
    case 'EADDRINUSE':
      return new StartupError(
        code,
        `cannot listen on ${at}: the port is in use (another server?); choose another with --port (env SEQUOIA_PORT)`,
      );
    case 'EACCES':
      return new StartupError(
        code,
        `cannot listen on ${at}: not permitted (ports below 1024 need privileges); choose another with --port (env SEQUOIA_PORT)`,
      );
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartupError(code, `cannot listen on ${at}: no such local address; choose another with --host (env SEQUOIA_HOST)`);
    default:
      return e instanceof Error ? e : new Error(String(e));
  }
}

export interface PortReservation {
  /** The bound port (the OS's choice when 0 was asked for). */
  readonly port: number;
  /** Frees the port for the real server to bind. */
  release(): Promise<void>;
}

/** Binds host:port exclusively (port 0: a free one) and holds it until `release`. */
export function reservePort(host: string, port: number): Promise<PortReservation> {
  return new Promise((resolve, reject) => {
    // Clients of a server restarted on its port connect while it starts: the
    // reservation serves none of them, and a connection it kept open would hold
    // close() (hence the start) until the client gave up. Reset them at once.
    const s = createServer((socket) => socket.resetAndDestroy());
    s.once('error', (e) => reject(listenError(e, host, port)));
    s.listen({ host, port, exclusive: true }, () => {
      const a = s.address();
      let released: Promise<void> | undefined;
      resolve({
        port: typeof a === 'object' && a ? a.port : port,
        release: () => (released ??= new Promise<void>((r) => s.close(() => r()))),
      });
    });
  });
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6'); // IPv4-mapped addresses (::ffff:127.0.0.1) are checked against the IPv4 rule

/**
 * Whether listening on `host` reaches only this machine: `localhost`, or an
 * address in 127.0.0.0/8 or ::1 (any spelling, brackets allowed). Any other
 * name counts as beyond loopback, unresolved: what a name resolves to may
 * change under a running server, and `0.0.0.0` and `::` are every interface.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (h === 'localhost') return true;
  const family = isIP(h);
  return family !== 0 && LOOPBACK.check(h, family === 4 ? 'ipv4' : 'ipv6');
}
