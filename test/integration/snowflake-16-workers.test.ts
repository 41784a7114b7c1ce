/**
 * 16 workers × 200,000 snowflake IDs at once (issue 8, "Prove it"): 16
 * worker_threads, each a SnowflakeService (the built dist/) whose worker id is
 * leased from one shared SQLite file by the sql-lease provider, all released
 * by a barrier together. Each thread writes its IDs into its slice of one
 * SharedArrayBuffer (BigUint64Array); the main thread then checks that the 16
 * leased ids differ, that all 3.2 M IDs differ (sorted, neighbours compared),
 * and that every ID's decoded worker field is the worker that made it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { getLayout } from '../../src/core/snowflake/layout.js';
import { ROOT, assertBuilt } from '../helpers/cli.js';

const WORKERS = 16;
const PER_WORKER = 200_000;
const twitter = getLayout('twitter');
const dirs: string[] = [];

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** One thread: lease a worker id, wait for the barrier, fill its slice, report its worker id, give the id back. */
const THREAD = `
const { workerData: w, parentPort } = require('node:worker_threads');
(async () => {
  const { SnowflakeService } = await import(w.urls.service);
  const { LeaseWorkerIdProvider } = await import(w.urls.lease);
  const { SqliteWorkerLeaseStore } = await import(w.urls.sqlite);
  const provider = new LeaseWorkerIdProvider(new SqliteWorkerLeaseStore(w.db), { ttlMs: 10000, acquireWaitMs: 20000 });
  const service = new SnowflakeService({ provider, defaultLayout: 'twitter', clockPolicy: 'wait' });
  await service.start();
  const workerId = service.report()[0].workerId;
  // Barrier: every thread holds its id before any issues.
  const gate = new Int32Array(w.gate);
  Atomics.add(gate, 0, 1);
  Atomics.notify(gate, 0);
  while (Atomics.load(gate, 1) === 0) Atomics.wait(gate, 1, 0, 50);
  const out = new BigUint64Array(w.ids, w.offset * 8, w.count);
  let i = 0;
  while (i < w.count) {
    const batch = await service.nextMany('twitter', Math.min(10000, w.count - i));
    for (let j = 0; j < batch.length; j++) out[i++] = BigInt(batch[j]);
  }
  await service.close();
  parentPort.postMessage({ workerId });
})().catch((e) => parentPort.postMessage({ error: String(e && e.stack || e) }));
`;

describe('16 workers × 200,000 snowflake IDs', () => {
  it('no repeats across 3.2 M IDs; every ID carries the worker id that made it', async () => {
    assertBuilt();
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-16w-'));
    dirs.push(dir);
    const dist = (p: string) => pathToFileURL(join(ROOT, 'dist', p)).href;
    const urls = {
      service: dist('service/snowflake-service.js'),
      lease: dist('adapters/lease/lease-worker-id-provider.js'),
      sqlite: dist('adapters/sqlite/sqlite-worker-lease-store.js'),
    };
    const ids = new SharedArrayBuffer(WORKERS * PER_WORKER * 8);
    const gate = new SharedArrayBuffer(8);
    const gateView = new Int32Array(gate);
    const threads = Array.from(
      { length: WORKERS },
      (_, k) =>
        new Worker(THREAD, {
          eval: true,
          workerData: { urls, db: join(dir, 'leases.db'), ids, gate, offset: k * PER_WORKER, count: PER_WORKER },
        }),
    );
    const results = threads.map(
      (t) =>
        new Promise<number>((resolve, reject) => {
          t.once('message', (m: { workerId?: number; error?: string }) =>
            m.error ? reject(new Error(m.error)) : resolve(m.workerId as number),
          );
          t.once('error', reject);
        }),
    );
    // Open the barrier once all 16 hold their ids (or one failed).
    const deadline = Date.now() + 30_000;
    while (Atomics.load(gateView, 0) < WORKERS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(Atomics.load(gateView, 0)).toBe(WORKERS);
    const t0 = performance.now();
    Atomics.store(gateView, 1, 1);
    Atomics.notify(gateView, 1);
    const workerIds = await Promise.all(results);
    const issueMs = performance.now() - t0;
    await Promise.all(threads.map((t) => t.terminate()));

    expect(new Set(workerIds).size).toBe(WORKERS);
    const all = new BigUint64Array(ids);
    // Worker field of twitter: the 10 bits above the 12-bit sequence (datacenter and worker together).
    const shift = BigInt(twitter.sequenceBits);
    const mask = BigInt(2 ** twitter.workerBits - 1);
    let wrongWorker = 0;
    let zero = 0;
    for (let k = 0; k < WORKERS; k++) {
      const want = BigInt(workerIds[k] as number);
      for (let i = k * PER_WORKER; i < (k + 1) * PER_WORKER; i++) {
        const id = all[i] as bigint;
        if (id === 0n) zero++;
        if (((id >> shift) & mask) !== want) wrongWorker++;
      }
    }
    expect(zero).toBe(0);
    expect(wrongWorker).toBe(0);
    const sorted = all.slice().sort();
    let repeats = 0;
    for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) repeats++;
    expect(repeats).toBe(0);
    expect(sorted.length).toBe(WORKERS * PER_WORKER);
    console.info(
      `[16 workers] ${sorted.length} IDs issued in ${Math.round(issueMs)} ms, worker ids ${[...workerIds].sort((a, b) => a - b).join(',')}`,
    );
  }, 60_000);
});
