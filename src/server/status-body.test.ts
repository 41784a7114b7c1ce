import { describe, expect, it } from 'vitest';
import { PRESETS, defineLayout } from '../core/snowflake/layout.js';
import { MemorySegmentStore } from '../adapters/memory/memory-segment-store.js';
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { IdService } from '../service/id-service.js';
import { type RecentError, SequoiaMetrics } from './metrics.js';
import { type StatusInputs, statusBody } from './status-body.js';

const T0 = Date.UTC(2026, 0, 1);

function inputs(over: Partial<StatusInputs> = {}): StatusInputs {
  return {
    version: '1.2.3',
    uptimeMs: 90_400,
    nowMs: T0 + 90_400,
    admin: false,
    detail: false,
    adminTokenRequired: true,
    storeKind: 'memory',
    store: { reachable: true, latencyMs: 0.4, checkedAt: new Date(T0).toISOString(), error: null },
    tags: [],
    errorsByCode: {},
    recentErrors: [],
    layouts: [],
    defaultLayout: undefined,
    snowflakeReports: [],
    ...over,
  };
}

const error = (i: number): RecentError => ({
  at: T0 + i,
  code: 'NOT_FOUND',
  status: 404,
  method: 'GET',
  path: `/v1/segment/t${i}`,
  message: `unknown tag t${i}`,
});

describe('statusBody (the /v1/status answer)', () => {
  it('reads the uptime and the time from its inputs, and names the store kind with its probe', () => {
    const body = statusBody(inputs());
    expect(body).toMatchObject({ version: '1.2.3', uptimeSeconds: 90, now: new Date(T0 + 90_400).toISOString(), adminTokenRequired: true });
    expect(body.store).toEqual({ kind: 'memory', reachable: true, latencyMs: 0.4, checkedAt: new Date(T0).toISOString(), error: null });
  });

  it('leaves the tags out without detail', async () => {
    const service = new IdService({ store: new MemorySegmentStore(), marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0 });
    await service.start();
    await service.createTag({ tag: 'order', step: 10 });
    await service.next('order');
    const metrics = new SequoiaMetrics({ sampleIntervalMs: 0, defaultMetrics: false });
    metrics.attach(service);
    const tags = metrics.tagStatuses();
    expect(statusBody(inputs({ tags, detail: true })).tags).toMatchObject([{ tag: 'order', issued: 1 }]);
    expect(statusBody(inputs({ tags, detail: false })).tags).toEqual([]);
    await service.close();
    metrics.close();
  });

  it('shows recent errors without method, path or message to a caller without the admin token, 20 at most', () => {
    const recentErrors = Array.from({ length: 25 }, (_, i) => error(i));
    const plain = statusBody(inputs({ recentErrors, errorsByCode: { NOT_FOUND: 25 } }));
    expect(plain.errors.byCode).toEqual({ NOT_FOUND: 25 });
    expect(plain.errors.recent).toHaveLength(20);
    expect(plain.errors.recent[0]).toEqual({ at: new Date(T0).toISOString(), code: 'NOT_FOUND', status: 404 });
    const admin = statusBody(inputs({ recentErrors, admin: true, detail: true }));
    expect(admin.errors.recent[3]).toEqual({
      at: new Date(T0 + 3).toISOString(),
      code: 'NOT_FOUND',
      status: 404,
      method: 'GET',
      path: '/v1/segment/t3',
      message: 'unknown tag t3',
    });
  });

  it('lists the layouts, marking presets and the default', () => {
    const twitter = PRESETS.get('twitter')!;
    const own = defineLayout({ ...twitter, name: 'own' });
    const body = statusBody(inputs({ layouts: [twitter, own], defaultLayout: 'own' }));
    expect(body.layouts).toMatchObject([
      { name: 'twitter', preset: true, default: false, epoch: new Date(twitter.epochMs).toISOString(), timeBits: twitter.timeBits },
      { name: 'own', preset: false, default: true },
    ]);
  });

  it('gives each snowflake worker its lease expiry relative to now, null without a lease', () => {
    const report = { generator: 'twitter', workerId: 7, lastTick: 42, clockBackwardsTotal: 1, sequenceExhaustedTotal: 2 };
    const body = statusBody(inputs({ snowflakeReports: [{ ...report, leaseExpiresAtMs: T0 + 90_400 + 12_340 }, report] }));
    expect(body.workers).toEqual([
      {
        ...report,
        leaseExpiresAt: new Date(T0 + 90_400 + 12_340).toISOString(),
        leaseExpiresInSeconds: 12.3,
        layoutRemainingSeconds: null,
      },
      { ...report, leaseExpiresAt: null, leaseExpiresInSeconds: null, layoutRemainingSeconds: null },
    ]);
  });
});
