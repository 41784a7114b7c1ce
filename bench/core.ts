/** In-process next(): Sequoia's segment allocator against a bare counter closure. */
import { openBackend } from '../src/app/stores.js';
import { createIdService } from '../src/app/wiring.js';
import type { IdService } from '../src/service/id-service.js';
import type { TagAllocator } from '../src/service/tag-allocator.js';
import { median } from './util.js';

const N = 20_000_000;

function runCounter(): number {
  let n = 0;
  const next = () => ++n;
  let acc = 0;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) acc ^= next();
  const ms = performance.now() - t0;
  if (acc === -1) console.log(acc);
  return (N / ms) * 1000;
}

type Pending = Promise<number | bigint> | undefined;

/**
 * The loop a hot caller writes: synchronous while the buffer answers with a
 * value, leaving the loop only to await the rare promise (a segment load).
 * One function per call shape, so each call site stays monomorphic, as in a
 * real caller. Returns how many IDs it took, their xor, and the promise.
 */
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

async function runSequoia(viaHandle: boolean): Promise<number> {
  // Wired as the CLI's `sequoia bench` is (src/app/wiring.ts): an in-memory store and marks.
  const service = createIdService({ store: 'memory:', stateDir: null, refreshIntervalMs: 0 }, await openBackend('memory:'));
  await service.start();
  await service.createTag({ tag: 'bench', step: 1_000_000 });
  const order = await service.allocator('bench');
  await order.next();
  let acc = 0;
  let left = N;
  const t0 = performance.now();
  while (left > 0) {
    const [done, a, pending] = viaHandle ? takeViaHandle(order, left) : takeViaTag(service, left);
    acc ^= a;
    left -= done;
    if (pending) {
      acc ^= Number(await pending);
      left--;
    }
  }
  const ms = performance.now() - t0;
  if (acc === -1) console.log(acc);
  await service.close();
  return (N / ms) * 1000;
}

export async function benchCore(rounds: number): Promise<{ counter: number; handle: number; byTag: number }> {
  const c: number[] = [];
  const h: number[] = [];
  const t: number[] = [];
  for (let r = 0; r < rounds; r++) {
    c.push(runCounter());
    h.push(await runSequoia(true));
    t.push(await runSequoia(false));
  }
  return { counter: median(c), handle: median(h), byTag: median(t) };
}
