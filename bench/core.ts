/** In-process next(): Sequoia's segment allocator against a bare counter closure. */
import { MemorySegmentStore } from '../src/adapters/memory/memory-segment-store.js';
import { MemoryHighWaterMarkStore } from '../src/adapters/state-dir/file-high-water-mark-store.js';
import { IdService } from '../src/service/id-service.js';
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

async function runSequoia(viaHandle: boolean): Promise<number> {
  const store = new MemorySegmentStore();
  await store.createTag({ tag: 'bench', step: 1_000_000 });
  const service = new IdService({ store, marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0 });
  await service.start();
  const order = await service.allocator('bench');
  await order.next();
  let acc = 0;
  const t0 = performance.now();
  if (viaHandle) {
    for (let i = 0; i < N; i++) {
      const v = order.next();
      acc ^= typeof v === 'number' ? v : Number(await v); // a promise only when a segment must be awaited
    }
  } else {
    for (let i = 0; i < N; i++) {
      const v = service.next('bench');
      acc ^= typeof v === 'number' ? v : Number(await v);
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
