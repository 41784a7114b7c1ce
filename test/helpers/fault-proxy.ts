/**
 * Test-only: a TCP proxy (node:net) in front of a real store, which a test
 * can make misbehave:
 * - cut():    destroy every connection and refuse new ones (accepted, then
 *             closed at once: "connection reset"), as a crashed server;
 * - stall():  accept and keep connections, but forward nothing (held bytes
 *             are sent on restore()), as a hung network; stall('down') holds
 *             only the store's answers, so requests still reach the store:
 *             the "committed, but the answer is lost" case when followed by cut();
 * - slow(ms): delay every chunk by `ms`, in order, in both directions;
 * - restore(): back to a plain pipe (held bytes flushed).
 * Used by the fault tests and the latency benchmark.
 */
import { type AddressInfo, createServer, type Server, Socket } from 'node:net';

type Direction = 'up' | 'down';

class Pipe {
  private held: Buffer[] = [];
  private lastDue = 0;

  constructor(
    private readonly proxy: FaultProxy,
    private readonly dir: Direction,
    private readonly to: Socket,
  ) {}

  push(chunk: Buffer): void {
    if (this.proxy.isStalled(this.dir) || this.held.length > 0) {
      this.held.push(chunk);
      return;
    }
    this.send(chunk);
  }

  flush(): void {
    if (this.proxy.isStalled(this.dir)) return;
    const held = this.held;
    this.held = [];
    for (const c of held) this.send(c);
  }

  private send(chunk: Buffer): void {
    const ms = this.proxy.latencyMs;
    const now = Date.now();
    if (ms <= 0 && this.lastDue <= now) {
      if (!this.to.destroyed) this.to.write(chunk);
      return;
    }
    // keep order: never before an earlier delayed chunk
    const due = Math.max(this.lastDue, now + ms);
    this.lastDue = due;
    setTimeout(() => {
      if (!this.to.destroyed) this.to.write(chunk);
    }, due - now);
  }
}

interface Conn {
  readonly client: Socket;
  readonly upstream: Socket;
  readonly up: Pipe;
  readonly down: Pipe;
}

export class FaultProxy {
  latencyMs = 0;
  private refusing = false;
  private stalled: 'both' | Direction | undefined;
  private readonly conns = new Set<Conn>();
  /** Connections accepted since start (including refused ones). */
  accepted = 0;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    readonly targetHost: string,
    readonly targetPort: number,
  ) {}

  /** Listens on 127.0.0.1 (a free port) and forwards to target. */
  static async start(targetHost: string, targetPort: number): Promise<FaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const proxy = new FaultProxy(server, (server.address() as AddressInfo).port, targetHost, targetPort);
    server.on('connection', (client: Socket) => proxy.accept(client));
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  static rewrite(url: string, port: number): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(port);
    return u.toString();
  }

  isStalled(dir: Direction): boolean {
    return this.stalled === 'both' || this.stalled === dir;
  }

  get connections(): number {
    return this.conns.size;
  }

  cut(): void {
    this.refusing = true;
    for (const c of [...this.conns]) this.kill(c);
  }

  stall(which: 'both' | Direction = 'both'): void {
    this.stalled = which;
  }

  slow(ms: number): void {
    this.latencyMs = ms;
  }

  restore(): void {
    this.refusing = false;
    this.stalled = undefined;
    this.latencyMs = 0;
    for (const c of this.conns) {
      c.up.flush();
      c.down.flush();
    }
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    this.accepted++;
    if (this.refusing) {
      client.resetAndDestroy();
      return;
    }
    const upstream = new Socket();
    const conn: Conn = { client, upstream, up: new Pipe(this, 'up', upstream), down: new Pipe(this, 'down', client) };
    this.conns.add(conn);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.on('data', (d: Buffer) => conn.up.push(d));
    upstream.on('data', (d: Buffer) => conn.down.push(d));
    const end = () => this.kill(conn);
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    // Writes to upstream before it connects are buffered by the socket itself.
    upstream.connect(this.targetPort, this.targetHost);
  }

  private kill(c: Conn): void {
    if (!this.conns.delete(c)) return;
    c.client.resetAndDestroy();
    c.upstream.destroy();
  }
}
