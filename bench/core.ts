/**
 * In-process next(): Sequoia's segment allocator against a bare counter
 * closure, both driven by the same loop (issue 45: "in the same loop shape").
 * Each side is timed by wall clock and by the process's CPU time: on a shared
 * machine the wall clock counts the time other processes held the core, so
 * the ratio is taken per round from CPU time, each Sequoia run against the
 * counter run just before it.
 */
import { openBackend } from '../src/app/stores.js';
import { createIdService } from '../src/app/wiring.js';
import type { IdService } from '../src/service/id-service.js';
import type { TagAllocator } from '../src/service/tag-allocator.js';
import { median } from './util.js';

const N = 20_000_000;

type Pending = Promise<number | bigint> | undefined;
type Take<S> = (source: S, n: number) => [number, number, Pending];

/**
 * The loop a hot caller writes: synchronous while the source answers with a
 * value, leaving the loop only to await the rare promise (a segment load).
 * One function per call shape, so each call site stays monomorphic, as in a
 * real caller; the three bodies are the same but for the call. Returns how
 * many IDs it took, their xor, and the promise.
 */
function takeViaCounter(next: () => number | Promise<number>, n: number): [number, number, Pending] {
  let acc = 0;
  for (let i = 0; i < n; i++) {
    const v = next();
    if (typeof v !== 'number') return [i, acc, Promise.resolve(v)];
    acc ^= v;
  }
  return [n, acc, undefined];
}

function takeViaHandle(order: TagAllocator, n: number): [number, number, Pending] {
  let acc = 0;
  for (let i = 0; i < n; i++) {
    const v = order.next();
    if (typeof v !== 'number') return [i, acc, Promise.resolve(v)];
    acc ^= v;
  }
  return [n, acc, undefined];
}

function takeViaTag(service: IdService, n: number): [number, number, Pending] {
  let acc = 0;
  for (let i = 0; i < n; i++) {
    const v = service.next('bench');
    if (typeof v !== 'number') return [i, acc, Promise.resolve(v)];
    acc ^= v;
  }
  return [n, acc, undefined];
}

/** IDs/s by wall clock and by CPU time. */
interface Rate {
  readonly wall: number;
  readonly cpu: number;
}

async function drive<S>(take: Take<S>, source: S): Promise<Rate> {
  let acc = 0;
  let left = N;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  while (left > 0) {
    const [done, a, pending] = take(source, left);
    acc ^= a;
    left -= done;
    if (pending) {
      acc ^= Number(await pending);
      left--;
    }
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  if (acc === -1) console.log(acc);
  return { wall: (N / ms) * 1000, cpu: (N / (cpu.user + cpu.system)) * 1e6 };
}

function runCounter(): Promise<Rate> {
  let n = 0;
  return drive(takeViaCounter, () => ++n);
}

async function runSequoia(viaHandle: boolean): Promise<Rate> {
  // Wired as the CLI's `sequoia bench` is (src/app/wiring.ts): an in-memory store and marks.
  const service = createIdService({ store: 'memory:', stateDir: null, refreshIntervalMs: 0 }, await openBackend('memory:'));
  await service.start();
  await service.createTag({ tag: 'bench', step: 1_000_000 });
  const order = await service.allocator('bench');
  await order.next();
  const r = viaHandle ? await drive(takeViaHandle, order) : await drive(takeViaTag, service);
  await service.close();
  return r;
}

export interface CoreBenchResult {
  /** Medians, IDs/s by wall clock. */
  readonly counter: number;
  readonly handle: number;
  readonly byTag: number;
  /** Medians, IDs/s by CPU time. */
  readonly counterCpu: number;
  readonly handleCpu: number;
  /** Median over the rounds of handle / counter by CPU time, each against its own round's counter. */
  readonly handleRatio: number;
  /** The lowest and highest of those per-round ratios. */
  readonly handleRatioRange: readonly [number, number];
}

export async function benchCore(rounds: number): Promise<CoreBenchResult> {
  const c: Rate[] = [];
  const h: Rate[] = [];
  const t: Rate[] = [];
  for (let r = 0; r < rounds; r++) {
    c.push(await runCounter());
    h.push(await runSequoia(true));
    t.push(await runSequoia(false));
  }
  const ratios = h.map((x, i) => x.cpu / (c[i] as Rate).cpu);
  return {
    counter: median(c.map((x) => x.wall)),
    handle: median(h.map((x) => x.wall)),
    byTag: median(t.map((x) => x.wall)),
    counterCpu: median(c.map((x) => x.cpu)),
    handleCpu: median(h.map((x) => x.cpu)),
    handleRatio: median(ratios),
    handleRatioRange: [Math.min(...ratios), Math.max(...ratios)],
  };
}
