/**
 * A renewal that cannot reach the store is logged once per few seconds, with
 * the count since the last line: requests renew on demand, and a state dir or
 * store that stays unwritable made 150–200 warn lines a second per worker.
 */
import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../core/errors.js';
import type { SnowflakeGenerator } from '../core/snowflake/generator.js';
import { getLayout } from '../core/snowflake/layout.js';
import type { WorkerIdProvider } from '../ports/worker-id-provider.js';
import { LeasedWorker } from './snowflake-lease.js';

describe('LeasedWorker renewal failures', () => {
  it('are logged once, with their count, however many requests renew meanwhile', async () => {
    const layout = getLayout('twitter');
    const generator = { lastIssuedTick: 0, ceilingTick: 0, currentTick: () => 1, extend: () => undefined } as unknown as SnowflakeGenerator;
    const provider = {
      renew: () => Promise.reject(new UnavailableError('STORE_UNAVAILABLE', 'the store cannot be reached')),
    } as unknown as WorkerIdProvider;
    const warned: object[] = [];
    const logger = { debug: () => {}, info: () => {}, error: () => {}, warn: (o: object) => void warned.push(o) };
    const grant = { workerId: 1, generation: 1, afterTick: 0, validUntil: Number.POSITIVE_INFINITY };
    const w = new LeasedWorker(
      layout,
      { key: 'k', label: 'twitter', workerCount: 1024, unitMs: 1 },
      generator,
      [grant],
      provider,
      logger,
      () => {},
    );
    let failures = 0;
    for (let i = 0; i < 200; i++) await w.renew(5).catch(() => failures++);
    expect(failures).toBe(200);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ failures: 1, err: 'the store cannot be reached' });
  });
});
