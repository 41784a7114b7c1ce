/**
 * One view of a `serve --workers N` cluster. Every worker is an independent
 * server; a request for /metrics or /v1/status lands on one of them. That
 * worker asks the primary to gather the same figures from every worker (over
 * the cluster IPC channel) and merges them, so operators see the whole
 * server, not whichever worker answered.
 *
 * Protocol: worker → primary `gather`; primary → every worker `collect`;
 * workers → primary `collected`; primary → asking worker `gathered` with all
 * answers that arrived within the timeout. Without a primary (one process),
 * or when it does not answer in time, the local figures are used.
 */
import cluster, { type Worker } from 'node:cluster';

const TIMEOUT_MS = 1000;

type Source = (arg: unknown) => Promise<unknown>;

interface GatherMsg {
  readonly type: 'sequoia:gather';
  readonly id: number;
  readonly name: string;
  readonly arg: unknown;
}
interface CollectMsg {
  readonly type: 'sequoia:collect';
  readonly id: number;
  readonly name: string;
  readonly arg: unknown;
}
interface CollectedMsg {
  readonly type: 'sequoia:collected';
  readonly id: number;
  readonly slot: number;
  readonly ok: boolean;
  readonly value: unknown;
}
interface GatheredMsg {
  readonly type: 'sequoia:gathered';
  readonly id: number;
  readonly results: Array<{ slot: number; value: unknown }>;
}

export interface Gathered<T> {
  readonly slot: number;
  readonly value: T;
}

const sources = new Map<string, Source>();
const waiting = new Map<number, (r: GatheredMsg['results'] | undefined) => void>();
let nextId = 1;
let nextCollectId = 1;
let listening = false;

/** The worker slot of this process, or undefined outside a cluster. */
export function workerSlot(): number | undefined {
  const s = process.env.SEQUOIA_WORKER_SLOT;
  return cluster.isWorker && s !== undefined ? Number(s) : undefined;
}

function listenAsWorker(): void {
  if (listening) return;
  listening = true;
  process.on('message', (m: CollectMsg | GatheredMsg) => {
    if (m?.type === 'sequoia:collect') {
      const src = sources.get(m.name);
      const reply = (ok: boolean, value: unknown) =>
        process.send?.({ type: 'sequoia:collected', id: m.id, slot: workerSlot() ?? -1, ok, value } satisfies CollectedMsg);
      if (!src) reply(false, undefined);
      else
        src(m.arg).then(
          (v) => reply(true, v),
          () => reply(false, undefined),
        );
    } else if (m?.type === 'sequoia:gathered') {
      waiting.get(m.id)?.(m.results);
      waiting.delete(m.id);
    }
  });
}

/** Makes `fn` answer the primary's `collect` requests for `name` (a no-op outside a cluster). */
export function registerGatherSource<A, T>(name: string, fn: (arg: A) => Promise<T>): void {
  if (workerSlot() === undefined) return;
  sources.set(name, fn as Source);
  listenAsWorker();
}

/**
 * Every worker's answer for `name` (this one's included), or undefined when
 * this process is not a cluster worker or the primary did not answer.
 */
export function gather<T>(name: string, arg: unknown): Promise<Array<Gathered<T>> | undefined> {
  if (workerSlot() === undefined || !process.send) return Promise.resolve(undefined);
  listenAsWorker();
  const id = nextId++;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      resolve(undefined);
    }, TIMEOUT_MS * 2);
    waiting.set(id, (r) => {
      clearTimeout(timer);
      resolve(r as Array<Gathered<T>> | undefined);
    });
    process.send?.({ type: 'sequoia:gather', id, name, arg } satisfies GatherMsg);
  });
}

/** Primary side: answers one worker's `gather` by asking every live worker. */
export function handleGatherInPrimary(from: Worker, m: unknown, workers: () => Worker[]): boolean {
  const msg = m as GatherMsg;
  if (msg?.type !== 'sequoia:gather') return false;
  const targets = workers().filter((w) => w.isConnected());
  // The primary's own id: two workers may both be asking with id 1.
  const cid = nextCollectId++;
  const results: GatheredMsg['results'] = [];
  let left = targets.length;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    for (const w of targets) w.off('message', onMessage);
    if (from.isConnected()) from.send({ type: 'sequoia:gathered', id: msg.id, results } satisfies GatheredMsg);
  };
  const onMessage = (r: CollectedMsg) => {
    if (r?.type !== 'sequoia:collected' || r.id !== cid) return;
    if (r.ok) results.push({ slot: r.slot, value: r.value });
    if (--left === 0) finish();
  };
  const timer = setTimeout(finish, TIMEOUT_MS);
  for (const w of targets) {
    w.on('message', onMessage);
    w.send({ type: 'sequoia:collect', id: cid, name: msg.name, arg: msg.arg } satisfies CollectMsg);
  }
  if (left === 0) finish();
  return true;
}
