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

describe('LeasedWorker close', () => {
  it('reserves nothing after its release: renewals waiting behind one in flight when it closes do not run (simulator seed 6)', async () => {
    const layout = getLayout('twitter');
    // A revoked generator: extend() raises nothing, so a waiting renewal for a tick above the ceiling would renew again.
    const generator = {
      lastIssuedTick: 5,
      ceilingTick: 10,
      lastAllowedTick: Number.MAX_SAFE_INTEGER,
      currentTick: () => 5,
      extend: () => undefined,
      revoke: () => undefined,
      lastIssuedTickOf: () => 5,
    } as unknown as SnowflakeGenerator;
    const calls: string[] = [];
    let answer: () => void = () => {};
    const provider = {
      ttlMs: 3000,
      renew: (_s: unknown, g: unknown, ceiling: number) => {
        calls.push(`renew ${ceiling}`);
        return calls.length === 1 ? new Promise((resolve) => (answer = () => resolve(g))) : Promise.resolve(g);
      },
      release: (_s: unknown, _g: unknown, last: number) => {
        calls.push(`release ${last}`);
        return Promise.resolve();
      },
    } as unknown as WorkerIdProvider;
    const log = { debug: () => {}, info: () => {}, error: () => {}, warn: () => {} };
    const grant = { workerId: 1, generation: 1, afterTick: 0, validUntil: Number.POSITIVE_INFINITY };
    const w = new LeasedWorker(
      layout,
      { key: 'k', label: 'twitter', workerCount: 1024, unitMs: 1 },
      generator,
      [grant],
      provider,
      log,
      () => {},
    );
    const inFlight = w.renew();
    // Two requests waiting for a ceiling above the current one (policy logical borrowing ahead).
    const waiting = [w.renew(50), w.renew(60)].map((p) => p.catch(() => {}));
    const closed = w.close();
    answer();
    await Promise.all([inFlight, ...waiting, closed]);
    expect(calls.at(-1)).toBe('release 5');
    expect(calls.filter((c) => c.startsWith('renew'))).toHaveLength(1);
  });
});
