/** Steps the IdService tests share: taking IDs one by one, and waiting out a tag's background load. */
import type { IdService } from '../../src/service/id-service.js';
import { tick } from './fakes.js';

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
