/**
 * Every tag the API accepts (up to 128 characters) can be served and fenced:
 * marks are keyed by the tag inside the state directory's database, not by a
 * file name (a 128-character tag in hex was 256 bytes: ENAMETOOLONG). And a
 * mark that cannot be recorded is a coded 503 that backs off and does not
 * burn a range per retry.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteSegmentStore } from '../../src/adapters/sqlite/sqlite-segment-store.js';
import { StateDir } from '../../src/adapters/state-dir/state-dir.js';
import type { SequoiaError } from '../../src/core/errors.js';
import { IdService } from '../../src/service/id-service.js';
import { type ServerProcess, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

describe('long tags (serve, SQLite)', () => {
  it('a 128-character tag is created, served on both routes, fenced, and served again after a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-longtag-'));
    const args = ['--store', `sqlite:${join(dir, 'ids.db')}`, '--state-dir', join(dir, 'state')];
    const tag = `${'x'.repeat(120)}.${Math.random().toString(36).slice(2, 9)}`.slice(0, 128);
    expect(tag).toHaveLength(128);
    const s = await startServe(args);
    running.push(s);
    const created = await fetch(`${s.url}/v1/tags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tag, step: 10 }),
    });
    expect(created.status).toBe(201);
    const one = await fetch(`${s.url}/api/segment/get/${tag}`);
    expect([one.status, await one.text()]).toEqual([200, '1']);
    const many = await fetch(`${s.url}/v1/segment/${tag}?count=30`);
    expect(many.status).toBe(200);
    const fence = await fetch(`${s.url}/v1/tags/${tag}/fence`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ to: '1000' }),
    });
    expect(fence.status).toBe(200);
    const after = await fetch(`${s.url}/v1/segment/${tag}?count=5`);
    expect(after.status).toBe(200); // from the buffered range (still unique), then from 1000 on
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    const again = await startServe(args);
    running.push(again);
    const r = await fetch(`${again.url}/api/segment/get/${tag}`);
    expect(r.status).toBe(200);
    expect(BigInt(await r.text())).toBeGreaterThanOrEqual(1000n); // above the fence; what was served before is below it
    again.child.kill('SIGTERM');
  }, 60_000);
});

describe('a mark that cannot be recorded (real state directory and SQLite store)', () => {
  it('answers STORE_UNAVAILABLE, backs off, and burns at most one range while it lasts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-markfail-'));
    const store = new SqliteSegmentStore({ path: join(dir, 'ids.db') });
    const marks = new StateDir(join(dir, 'state'));
    const service = new IdService({ store, marks, refreshIntervalMs: 0, allocator: { minRetryDelayMs: 50, maxRetryDelayMs: 400 } });
    await service.start();
    await service.createTag({ tag: 'order', step: 100 });
    expect(await service.nextMany('order', 100)).toHaveLength(100); // the first range, used up
    await new Promise((r) => setTimeout(r, 200)); // its prefetch (the next range) lands
    const before = (await store.getTag('order'))!.maxId;
    await marks.close(); // the state directory stops taking writes (as on a full or failed disk)
    const codes = new Set<string>();
    const t0 = Date.now();
    while (Date.now() - t0 < 2000) {
      try {
        await service.next('order');
        codes.add('served');
      } catch (e) {
        codes.add((e as SequoiaError).code);
        expect((e as SequoiaError).message).toMatch(/state directory|high-water mark/);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    // the buffered next range is still served (its mark was recorded), then only the coded 503
    expect([...codes].filter((c) => c !== 'served')).toEqual(['STORE_UNAVAILABLE']);
    const after = (await store.getTag('order'))!.maxId;
    // at most the prefetch in flight when the first write failed, and one more, never one per retry
    expect(after - before).toBeLessThanOrEqual(400n);
    await service.close();
  });
});
