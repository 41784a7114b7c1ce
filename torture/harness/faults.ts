/**
 * Faults at seeded random moments: SIGKILL, SIGTERM, SIGSTOP/SIGCONT of
 * servers and of single cluster workers, and a store behind the fault proxy
 * slowed, stalled, cut, restarted and crashed. The moves and the seeded
 * rounds are written once here; a scenario picks its kinds and ranges.
 */
import type { FaultProxy } from '../../test/helpers/fault-proxy.js';
import type { Context } from './context.js';
import { sleep } from './rng.js';
import type { ServerProcess } from './server.js';

export type ProcessFault = 'kill' | 'term' | 'pause' | 'kill-worker' | 'pause-worker';

/** A range of milliseconds, [lowest, highest]. */
export type Span = readonly [number, number];

/** SIGKILL, then the same server started again after 50-500 ms (same port, same state). */
export async function killAndStart(ctx: Context, s: ServerProcess): Promise<void> {
  await s.kill();
  await sleep(ctx.rng.int(50, 500));
  await s.start();
}

/** One cluster worker of `s` (a random one) stopped with SIGSTOP for `span`, then continued. */
export async function pauseWorker(ctx: Context, s: ServerProcess, span: Span): Promise<void> {
  const pid = s.signalWorker((p) => (p.length === 0 ? undefined : ctx.rng.pick(p)), 'SIGSTOP');
  await sleep(ctx.rng.int(span[0], span[1]));
  if (pid !== undefined) s.signalWorker((p) => (p.includes(pid) ? pid : undefined), 'SIGCONT');
}

/** One cluster worker of `s` (a random one) SIGKILLed. */
export function killWorker(ctx: Context, s: ServerProcess): void {
  s.signalWorker((p) => (p.length === 0 ? undefined : ctx.rng.pick(p)), 'SIGKILL');
}

/** One process fault on `s`. */
export async function processFault(ctx: Context, s: ServerProcess, f: ProcessFault): Promise<void> {
  switch (f) {
    case 'kill':
      return killAndStart(ctx, s);
    case 'term':
      await s.stop();
      return s.start();
    case 'pause':
      s.signal('SIGSTOP');
      await sleep(ctx.rng.int(200, 1500));
      s.signal('SIGCONT');
      return;
    case 'kill-worker':
      return killWorker(ctx, s);
    case 'pause-worker':
      return pauseWorker(ctx, s, [200, 1500]);
  }
}

/**
 * Until `until`: every 300-1200 ms one fault on one server; a server that
 * went down is started again after a short while (same port, same state).
 */
export async function processFaults(
  ctx: Context,
  servers: readonly ServerProcess[],
  until: number,
  faults: readonly ProcessFault[],
): Promise<void> {
  const counts: Record<string, number> = {};
  while (Date.now() < until - 500) {
    await sleep(ctx.rng.int(300, 1200));
    const s = ctx.rng.pick(servers);
    if (!s.running) continue;
    const f = ctx.rng.pick(faults);
    counts[f] = (counts[f] ?? 0) + 1;
    await processFault(ctx, s, f);
  }
  ctx.notes.push(
    `process faults: ${
      Object.entries(counts)
        .map(([k, v]) => `${k} ×${v}`)
        .join(', ') || 'none'
    }`,
  );
}

export type StoreFault = 'slow' | 'stall' | 'cut' | 'drop-answer' | 'restart' | 'crash';

/** How long each store fault lasts in a scenario (`slow`: the delay per chunk). */
export interface StoreFaultSpans {
  readonly slow?: Span;
  readonly slowFor?: Span;
  readonly stall?: Span;
  readonly cut?: Span;
}

const STORE_FAULTS: ReadonlySet<string> = new Set<StoreFault>(['slow', 'stall', 'cut', 'drop-answer', 'restart', 'crash']);

export function isStoreFault(f: string): f is StoreFault {
  return STORE_FAULTS.has(f);
}

/**
 * One fault of the store behind `proxy`: slowed, stalled, cut, an answer
 * dropped after the store committed (stalled down, then cut), restarted or
 * crashed (`store.restart`). The caller restores the proxy.
 */
export async function storeFault(
  ctx: Context,
  proxy: FaultProxy,
  store: { restart(crash: boolean): Promise<void> },
  f: StoreFault,
  spans: StoreFaultSpans,
): Promise<void> {
  const wait = (span: Span | undefined, fallback: Span) => sleep(ctx.rng.int(...(span ?? fallback)));
  switch (f) {
    case 'slow':
      proxy.slow(ctx.rng.int(...(spans.slow ?? [20, 400])));
      return wait(spans.slowFor, [500, 1500]);
    case 'stall':
      proxy.stall();
      return wait(spans.stall, [300, 3000]);
    case 'cut':
      proxy.cut();
      return wait(spans.cut, [200, 2000]);
    case 'drop-answer':
      proxy.stall('down');
      await sleep(ctx.rng.int(50, 300));
      proxy.cut();
      return sleep(ctx.rng.int(100, 500));
    case 'restart':
      return store.restart(false);
    case 'crash':
      return store.restart(true);
  }
}

/**
 * Faults under load: `kinds` each once in a seeded order (up to `4 × ms`),
 * then random ones until `ms` has nearly passed, one every `gap` ms, each
 * through `apply` and followed by `proxy.restore()`; meanwhile `clients`
 * clients load the running servers, stopping when the faults are over. The
 * faults done go to the notes as `label: …`.
 */
export async function loadUnderFaults<K extends string>(
  ctx: Context,
  o: {
    readonly label: string;
    readonly ms: number;
    readonly kinds: readonly K[];
    readonly gap: Span;
    readonly proxy: FaultProxy;
    readonly apply: (f: K) => Promise<void>;
    readonly clients: number;
    readonly load: Omit<Parameters<Context['load']>[2], 'stop' | 'servers'>;
    readonly servers: readonly ServerProcess[];
  },
): Promise<void> {
  const until = Date.now() + o.ms;
  const hardStop = Date.now() + 4 * o.ms;
  let faultsDone = false;
  const faults = async () => {
    const done: string[] = [];
    const order = [...o.kinds].sort(() => ctx.rng.next() - 0.5);
    for (let i = 0; (i < order.length && Date.now() < hardStop) || Date.now() < until - 2500; i++) {
      await sleep(ctx.rng.int(o.gap[0], o.gap[1]));
      const f = order[i] ?? ctx.rng.pick(o.kinds);
      done.push(f);
      await o.apply(f);
      o.proxy.restore();
    }
    ctx.notes.push(`${o.label}: ${done.join(', ')}`);
    faultsDone = true;
  };
  await Promise.all([
    ctx.load(o.clients, 5 * o.ms, { ...o.load, servers: () => o.servers.filter((s) => s.running), stop: () => faultsDone }),
    faults(),
  ]);
}
