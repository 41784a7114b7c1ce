/**
 * Objects whose methods block (better-sqlite3: a busy timeout spent waiting
 * on another process's lock, an fsync, a checkpoint) run in a worker thread,
 * and the event loop talks to them through a proxy, so it never waits on a
 * lock or an fsync (DESIGN.md invariant 6): only the caller that needs the
 * write waits.
 *
 * Generic: the worker entry (`app/off-loop-worker.ts`) names factories; one
 * worker thread hosts the objects one factory makes (e.g. the segment and
 * lease stores sharing one SQLite handle), and the proxy forwards every method
 * call by name. Arguments and answers cross by structured clone (bigint, Date,
 * plain objects). A function argument becomes a call back to this thread: the
 * state dir's read-modify-write runs its `change` here, between the worker's
 * BEGIN IMMEDIATE and COMMIT. Errors come back as the same SequoiaError codes
 * and messages (other errors keep their message and `code`).
 *
 * The worker keeps the process alive only while a call is pending, like a
 * socket with a request in flight.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { errorFromCode, type Located, SequoiaError, UnavailableError } from '../../../core/errors.js';
import { type MakeMessage, takeWarmThread } from './warm.js';

type Primitive = string | number | boolean | bigint | null | undefined;

interface WireError {
  readonly sequoia: boolean;
  readonly name: string;
  readonly message: string;
  readonly code?: string | undefined;
  readonly retryAfterMs?: number | undefined;
  readonly located?: Located | undefined;
}

type ToWorker =
  | MakeMessage
  | { readonly t: 'call'; readonly id: number; readonly target: string; readonly method: string; readonly args: unknown[] }
  | { readonly t: 'cbr'; readonly id: number; readonly ok: boolean; readonly value?: unknown; readonly error?: WireError };

type FromWorker =
  | { readonly t: 'ready'; readonly props: Record<string, Record<string, Primitive>>; readonly methods: Record<string, string[]> }
  | { readonly t: 'failed'; readonly error: WireError }
  | { readonly t: 'res'; readonly id: number; readonly ok: boolean; readonly value?: unknown; readonly error?: WireError }
  | { readonly t: 'cb'; readonly id: number; readonly cb: number; readonly args: unknown[] };

/** A function argument on the wire. */
const FN = '__offLoopCallback';

/** What a factory makes: named objects whose methods the proxy may call. */
export type Hosted = Record<string, object>;
export type Factory = (args: unknown) => Hosted | Promise<Hosted>;

function toWire(e: unknown): WireError {
  if (e instanceof SequoiaError) {
    // The public message and the where cross apart, so the answer still names no path.
    const located = e.operatorDetail === undefined ? undefined : { publicMessage: e.publicMessage, detail: e.operatorDetail };
    return { sequoia: true, name: e.name, message: e.message, code: e.code, retryAfterMs: e.retryAfterMs, located };
  }
  const err = e instanceof Error ? e : new Error(String(e));
  const code = (e as { code?: unknown } | null)?.code;
  return { sequoia: false, name: err.name, message: err.message, code: typeof code === 'string' ? code : undefined };
}

function fromWire(w: WireError): Error {
  if (w.sequoia && w.code !== undefined) return errorFromCode(w.code, w.message, w.retryAfterMs, w.located);
  const e = new Error(w.message) as Error & { code?: string };
  e.name = w.name;
  if (w.code !== undefined) e.code = w.code;
  return e;
}

/** The methods of an object (its prototype chain, without Object's). */
function methodNames(o: object): string[] {
  const out = new Set<string>();
  for (let p = Object.getPrototypeOf(o) as object | null; p && p !== Object.prototype; p = Object.getPrototypeOf(p) as object | null) {
    for (const k of Object.getOwnPropertyNames(p)) {
      if (k !== 'constructor' && typeof (o as Record<string, unknown>)[k] === 'function') out.add(k);
    }
  }
  return [...out];
}

/** The primitive own properties of an object (`kind`, `stride`, `where`…), copied to the proxy. */
function primitives(o: object): Record<string, Primitive> {
  const out: Record<string, Primitive> = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === null || ['string', 'number', 'boolean', 'bigint'].includes(typeof v)) out[k] = v as Primitive;
  }
  return out;
}

// ---------------------------------------------------------------- worker side

/** Runs in the worker thread: makes the objects of `workerData.factory` and answers calls on them. */
export function serveOffLoop(factories: Record<string, Factory>): void {
  if (isMainThread || !parentPort) throw new Error('serveOffLoop runs in a worker thread');
  const port = parentPort;
  const data = workerData as { factory: string; args: unknown } | { warm: true };
  const pendingCallbacks = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  let nextCallback = 0;
  const post = (m: FromWorker) => port.postMessage(m);

  const revive = (a: unknown): unknown => {
    if (a === null || typeof a !== 'object' || !(FN in a)) return a;
    const cb = (a as Record<string, number>)[FN] as number;
    return (...cbArgs: unknown[]) =>
      new Promise((resolve, reject) => {
        const id = nextCallback++;
        pendingCallbacks.set(id, { resolve, reject });
        post({ t: 'cb', id, cb, args: cbArgs });
      });
  };

  const host = async (factory: string, args: unknown) => {
    let hosted: Hosted;
    try {
      const make = factories[factory];
      if (!make) throw new Error(`no off-loop factory ${JSON.stringify(factory)}`);
      hosted = await make(args);
    } catch (e) {
      post({ t: 'failed', error: toWire(e) });
      return;
    }
    port.on('message', (m: ToWorker) => {
      if (m.t === 'make') return;
      if (m.t === 'cbr') {
        const p = pendingCallbacks.get(m.id);
        pendingCallbacks.delete(m.id);
        if (m.ok) p?.resolve(m.value);
        else p?.reject(fromWire(m.error as WireError));
        return;
      }
      void (async () => {
        try {
          const target = hosted[m.target] as Record<string, unknown> | undefined;
          const fn = target?.[m.method];
          if (typeof fn !== 'function') throw new Error(`off-loop: no method ${m.target}.${m.method}`);
          const value: unknown = await (fn as (...a: unknown[]) => unknown).apply(target, m.args.map(revive));
          post({ t: 'res', id: m.id, ok: true, value });
        } catch (e) {
          post({ t: 'res', id: m.id, ok: false, error: toWire(e) });
        }
      })();
    });
    post({
      t: 'ready',
      props: Object.fromEntries(Object.entries(hosted).map(([k, v]) => [k, primitives(v)])),
      methods: Object.fromEntries(Object.entries(hosted).map(([k, v]) => [k, methodNames(v)])),
    });
  };
  // A warm thread (warm.ts) is told what to host by its first message.
  if ('warm' in data) port.once('message', (m: MakeMessage) => void host(m.factory, m.args));
  else void host(data.factory, data.args);
}

// ------------------------------------------------------------------ main side

/** One worker thread and the objects it hosts; `proxy(name)` is an object whose methods call them. */
export class OffLoopHost {
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void; callbacks: number[] }>();
  private readonly callbacks = new Map<number, (...a: unknown[]) => unknown>();
  private nextId = 0;
  private nextCallback = 0;
  private dead: Error | undefined;
  private props: Record<string, Record<string, Primitive>> = {};
  private methods: Record<string, string[]> = {};
  private readonly closed = new Set<string>();
  private readonly handedOut = new Set<string>();

  private constructor(
    private readonly worker: Worker,
    private readonly label: string,
  ) {}

  /** Starts a worker thread on `entry` (a module calling serveOffLoop) and makes the objects of `factory` there. */
  static async start(entry: URL, factory: string, args: unknown, label: string): Promise<OffLoopHost> {
    const warm = takeWarmThread(entry);
    const worker = warm ?? new Worker(entry, { workerData: { factory, args } });
    if (warm) {
      warm.ref();
      warm.postMessage({ t: 'make', factory, args } satisfies ToWorker);
    }
    const host = new OffLoopHost(worker, label);
    await host.ready();
    return host;
  }

  private ready(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.worker.on('message', (m: FromWorker) => {
        if (m.t === 'ready') {
          this.props = m.props;
          this.methods = m.methods;
          this.worker.unref();
          resolve();
        } else if (m.t === 'failed') {
          void this.worker.terminate();
          reject(fromWire(m.error));
        } else if (m.t === 'res') this.settle(m);
        else this.runCallback(m);
      });
      this.worker.on('error', (e) => {
        this.die(e);
        reject(e);
      });
      this.worker.on('exit', (code) => {
        const e = new Error(`the ${this.label} thread exited (${code})`);
        this.die(e);
        reject(e);
      });
    });
  }

  /** An object whose methods run `name`'s methods in the worker (all of them answer promises), with its primitive properties. */
  proxy<T extends object>(name: string): T {
    if (!(name in this.props)) throw new Error(`off-loop: the ${this.label} thread hosts no ${name}`);
    this.handedOut.add(name);
    const props = this.props[name] ?? {};
    const methods = new Set(this.methods[name] ?? []);
    return new Proxy(Object.freeze({ ...props }) as unknown as T, {
      get: (target, prop) => {
        if (typeof prop !== 'string') return undefined;
        if (Object.hasOwn(target, prop)) return (target as Record<string, unknown>)[prop];
        if (!methods.has(prop)) return undefined;
        if (prop === 'close') return () => this.close(name);
        return (...args: unknown[]) => this.call(name, prop, args);
      },
    });
  }

  call(target: string, method: string, args: unknown[]): Promise<unknown> {
    if (this.dead) return Promise.reject(unavailable(this.label, this.dead));
    const id = this.nextId++;
    const callbacks: number[] = [];
    const wired = args.map((a) => {
      if (typeof a !== 'function') return a;
      const cb = this.nextCallback++;
      this.callbacks.set(cb, a as (...x: unknown[]) => unknown);
      callbacks.push(cb);
      return { [FN]: cb };
    });
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, callbacks });
      if (this.pending.size === 1) this.worker.ref();
      this.worker.postMessage({ t: 'call', id, target, method, args: wired } satisfies ToWorker);
    });
  }

  /** Closes one hosted object; the thread ends when every object handed out is closed. */
  private async close(name: string): Promise<void> {
    if (this.closed.has(name) || this.dead) return;
    try {
      await this.call(name, 'close', []);
    } finally {
      this.closed.add(name);
      if ([...this.handedOut].every((n) => this.closed.has(n))) {
        this.dead = new Error('closed');
        await this.worker.terminate();
      }
    }
  }

  private settle(m: Extract<FromWorker, { t: 'res' }>): void {
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    for (const cb of p.callbacks) this.callbacks.delete(cb);
    if (this.pending.size === 0) this.worker.unref();
    if (m.ok) p.resolve(m.value);
    else p.reject(fromWire(m.error as WireError));
  }

  private runCallback(m: Extract<FromWorker, { t: 'cb' }>): void {
    const reply = (r: Omit<Extract<ToWorker, { t: 'cbr' }>, 't' | 'id'>) =>
      this.worker.postMessage({ t: 'cbr', id: m.id, ...r } satisfies ToWorker);
    const fn = this.callbacks.get(m.cb);
    if (!fn) return reply({ ok: false, error: toWire(new Error('off-loop: the callback is gone')) });
    Promise.resolve()
      .then(() => fn(...m.args))
      .then(
        (value) => reply({ ok: true, value }),
        (e: unknown) => reply({ ok: false, error: toWire(e) }),
      );
  }

  private die(e: Error): void {
    if (this.dead) return;
    this.dead = e;
    for (const p of this.pending.values()) p.reject(unavailable(this.label, e));
    this.pending.clear();
  }
}

function unavailable(label: string, e: Error): UnavailableError {
  return new UnavailableError('STORE_UNAVAILABLE', `the ${label} is not available (${e.message})`, { cause: e, retryAfterMs: 1000 });
}
