/**
 * The provider's ZooKeeper client: one session, connected on first use and
 * replaced by a new one on the next use after it expires (a dead session
 * never reconnects), and requests bounded by a timeout, since the driver would
 * otherwise wait for an answer as long as the connection lives.
 */
import zookeeper from 'node-zookeeper-client';
import { type ErrorCode, located, UnavailableError } from '../../core/errors.js';

type Callback<T> = (error: Error | zookeeper.Exception | null, result: T) => void;

export interface ZookeeperSessionOptions {
  /** Connection string, `host:port[,host:port…]`. */
  readonly connect: string;
  readonly sessionTimeoutMs: number;
  readonly requestTimeoutMs: number;
}

export class ZookeeperSession {
  private client: zookeeper.Client | undefined;
  private closed = false;

  constructor(private readonly o: ZookeeperSessionOptions) {}

  get connect(): string {
    return this.o.connect;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** The client once connected, or undefined after `ms`. */
  async connected(ms: number): Promise<zookeeper.Client | undefined> {
    const c = this.client ?? this.newClient();
    if (isConnected(c)) return c;
    return new Promise((res) => {
      const done = (v: zookeeper.Client | undefined) => {
        clearTimeout(timer);
        c.removeListener('connected', onConnected);
        res(v);
      };
      const onConnected = () => done(c);
      const timer = setTimeout(() => done(isConnected(c) ? c : undefined), ms);
      c.on('connected', onConnected);
    });
  }

  /** The client if connected now; starts a new session (for the next call) when there is none. */
  connectedNow(): zookeeper.Client | undefined {
    const c = this.client ?? (this.closed ? undefined : this.newClient());
    return c && isConnected(c) ? c : undefined;
  }

  /** The client if connected now, without starting a session. */
  currentIfConnected(): zookeeper.Client | undefined {
    const c = this.client;
    return c && isConnected(c) ? c : undefined;
  }

  /**
   * Whether `sessionId` may still be alive: it is this object's current
   * session, connected or not. False once ZooKeeper said it expired (the client
   * is then replaced, the session's ephemeral nodes are gone).
   */
  holds(sessionId: Buffer): boolean {
    return this.client !== undefined && this.client.getSessionId().equals(sessionId);
  }

  close(): void {
    this.closed = true;
    this.client?.close();
    this.client = undefined;
  }

  /** One request: rejects with LEASE_LOST when ZooKeeper does not answer within the request timeout. */
  call<T>(f: (cb: Callback<T>) => void): Promise<T> {
    return new Promise<T>((res, rej) => {
      const timer = setTimeout(
        () => rej(zookeeperAt(this.o.connect, (zk) => `${zk ?? 'ZooKeeper'} did not answer within ${this.o.requestTimeoutMs} ms`)),
        this.o.requestTimeoutMs,
      );
      f((e, r) => {
        clearTimeout(timer);
        if (e) rej(e);
        else res(r);
      });
    });
  }

  /** A request whose callback carries two results (data and stat, children and stat). */
  call2<A, B>(f: (cb: (e: Error | zookeeper.Exception | null, a: A, b: B) => void) => void): Promise<[A, B]> {
    return this.call<[A, B]>((cb) => f((e, a, b) => cb(e, [a, b])));
  }

  private newClient(): zookeeper.Client {
    const c = zookeeper.createClient(this.o.connect, { sessionTimeout: this.o.sessionTimeoutMs, spinDelay: 500, retries: 1 });
    c.on('expired', () => {
      // A dead session never reconnects: start a new client on the next use.
      if (this.client === c) this.client = undefined;
      c.close();
    });
    c.connect();
    this.client = c;
    return c;
  }
}

function isConnected(c: zookeeper.Client): boolean {
  return c.getState() === zookeeper.State.SYNC_CONNECTED;
}

/** Whether `e` is ZooKeeper's error `code` (e.g. zookeeper.Exception.NO_NODE). */
export function isZookeeperError(e: unknown, code: number): boolean {
  return e instanceof zookeeper.Exception && e.getCode() === code;
}

/** A failed ZooKeeper request as LEASE_LOST: the node's path, when the error names one, for the operator only. */
export function unavailable(e: unknown): UnavailableError {
  if (e instanceof UnavailableError) return e;
  const path = e instanceof zookeeper.Exception ? e.getPath() : undefined;
  if (e instanceof zookeeper.Exception && path) {
    const what = `${e.getName()}[${e.getCode()}]`;
    const { message, located: split } = located((w) => `ZooKeeper failed: Exception: ${what}${w ? `@${w}` : ''}`, path);
    return new UnavailableError('LEASE_LOST', message, { cause: e, retryAfterMs: 1000, located: split });
  }
  return new UnavailableError(
    'LEASE_LOST',
    `ZooKeeper failed: ${e instanceof Error || e instanceof zookeeper.Exception ? e.toString() : String(e)}`,
    {
      cause: e,
      retryAfterMs: 1000,
    },
  );
}

/**
 * An error whose message names the ensemble to the operator
 * (`say('ZooKeeper host:port,…')`, which may name more: a cache file, a node,
 * given again as `extra` for the detail); a client reads `say(undefined)`,
 * which names none of it.
 */
export function zookeeperAt(
  connect: string,
  say: (zk: string | undefined) => string,
  o: { readonly code?: ErrorCode; readonly extra?: string; readonly cause?: unknown; readonly retryAfterMs?: number } = {},
): UnavailableError {
  const detail = `ZooKeeper ${connect}${o.extra === undefined ? '' : `, ${o.extra}`}`;
  return new UnavailableError(o.code ?? 'LEASE_LOST', say(`ZooKeeper ${connect}`), {
    cause: o.cause,
    retryAfterMs: o.retryAfterMs,
    located: { publicMessage: say(undefined), detail },
  });
}
