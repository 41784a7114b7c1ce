/** What the IdService tests share: a store that outlives services, a service without refresh, taking IDs one by one, waiting out a load. */
import { MemorySegmentStore } from '../../src/adapters/memory/memory-segment-store.js';
import type { HighWaterMarkStore } from '../../src/ports/high-water-mark-store.js';
import type { SegmentStore } from '../../src/ports/segment-store.js';
import { IdService } from '../../src/service/id-service.js';
import { tick } from './fakes.js';

/** A store that stays open across services (as a database server does). */
export class LastingStore extends MemorySegmentStore {
  override async close(): Promise<void> {}
}

/** A service on `store` and `marks` that never refreshes its tags on its own. */
export function service(
  store: SegmentStore,
  marks: HighWaterMarkStore,
  extra: Partial<ConstructorParameters<typeof IdService>[0]> = {},
): IdService {
  return new IdService({ store, marks, refreshIntervalMs: 0, ...extra });
}

/** `n` IDs of `tag`, one request each. */
export async function take(s: IdService, tag: string, n: number): Promise<bigint[]> {
  const out: bigint[] = [];
  for (let i = 0; i < n; i++) out.push(BigInt(await s.next(tag)));
  return out;
}

/** Until `tag` has no load in flight (a bounded number of ticks). */
export async function settle(s: IdService, tag: string): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await tick();
    if (!s.snapshot().find((x) => x.tag === tag)?.loading) return;
  }
}
