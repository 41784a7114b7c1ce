import { describe, expect, it } from 'vitest';
import { MemorySegmentStore } from '../adapters/memory/memory-segment-store.js';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { IdService } from '../service/id-service.js';
import { SequoiaMetrics } from './metrics.js';
import { tagStatusJson } from './status-view.js';

async function served(start: bigint) {
  const store = new MemorySegmentStore();
  const service = new IdService({ store, marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0 });
  await service.start();
  await service.createTag({ tag: 'order', step: 10, start });
  const metrics = new SequoiaMetrics({ sampleIntervalMs: 0, defaultMetrics: false });
  metrics.attach(service);
  return { service, metrics, store };
}

describe('tagStatusJson (the /v1/status row of a tag)', () => {
  it('shows the current range as [value, max) in decimal strings, past 2^53 too', async () => {
    const { service, metrics } = await served(2n ** 60n);
    await service.next('order');
    await service.next('order');
    const row = tagStatusJson(metrics.tagStatuses()[0]!, true);
    expect(row).toMatchObject({
      tag: 'order',
      current: {
        start: String(2n ** 60n),
        end: String(2n ** 60n + 10n),
        value: String(2n ** 60n + 2n),
        max: String(2n ** 60n + 10n),
        size: 10,
      },
      issued: 2,
      loads: 1,
    });
    expect(typeof row.current?.start).toBe('string');
    await service.close();
    metrics.close();
  });

  it('a caller without the admin token sees the error code, never the message', async () => {
    const { service, metrics, store } = await served(1n);
    await service.next('order');
    const t = metrics.tagStatuses()[0]!;
    const failed = {
      ...t,
      snapshot: {
        ...t.snapshot,
        lastError: { code: 'STORE_UNAVAILABLE', message: 'PostgreSQL store at db:5432 error (ECONNRESET)', at: 0 },
      },
    };
    expect(tagStatusJson(failed as typeof t, true).lastError).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringContaining('db:5432'),
    });
    expect(tagStatusJson(failed as typeof t, false).lastError).toEqual({ code: 'STORE_UNAVAILABLE' });
    void store;
    await service.close();
    metrics.close();
  });
});
