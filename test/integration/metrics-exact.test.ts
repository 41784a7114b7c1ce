/**
 * sequoia_ids_issued_total is exact at scrape time, on a real server (one
 * process, and a cluster of two) on SQLite: 2,000 segment IDs through the
 * Leaf route and the JSON route, 2,000 snowflake IDs, then one scrape, no
 * wait. Snowflake series say generator="snowflake" and carry the layout;
 * UUIDs say generator="uuid" with their form (v7, v4, ulid) as the layout.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) s.child.kill('SIGTERM');
  await Promise.all(servers.map((s) => s.exited));
});

function series(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const i = line.lastIndexOf(' ');
    // under --workers 2 each worker's series carries worker="<slot>": sum them
    const labels = line.slice(name.length, i).replace(/,?worker="\d+"/, '');
    out.set(labels, (out.get(labels) ?? 0) + Number(line.slice(i + 1)));
  }
  return out;
}

for (const workers of ['1', '2']) {
  describe(`sequoia_ids_issued_total with --workers ${workers}`, () => {
    it('counts every ID handed out, by generator and tag / layout', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'sequoia-mx-'));
      const store = `sqlite:${join(dir, 'ids.db')}`;
      expect(sequoia(['tag', 'create', 'order', '--step', '300', '--store', store], { SEQUOIA_STATE_DIR: join(dir, 'cli') }).status).toBe(
        0,
      );
      const s = await startServe(['--workers', workers, '--store', store, '--state-dir', join(dir, 'state'), '--snowflake-layout', 'leaf']);
      servers.push(s);
      const get = async (path: string) => {
        const r = await fetch(s.url + path, { headers: workers === '2' ? { connection: 'close' } : {} });
        expect(r.status).toBe(200);
        return r.text();
      };
      // 1,000 one by one on the Leaf route (fast path and fastify), 1,000 as 10 × 100 on the JSON route
      for (let i = 0; i < 100; i++) await Promise.all(Array.from({ length: 10 }, () => get('/api/segment/get/order')));
      for (let i = 0; i < 10; i++) await get('/v1/segment/order?count=100');
      // 2,000 snowflake IDs: 1,000 on the Leaf route (default layout leaf), 1,000 twitter in batches
      for (let i = 0; i < 100; i++) await Promise.all(Array.from({ length: 10 }, () => get('/api/snowflake/get/order')));
      for (let i = 0; i < 4; i++) await get('/v1/snowflake?layout=twitter&count=250');
      // UUIDs: 300 v7 (one by one and a batch), 70 v4, 5 ULIDs
      for (let i = 0; i < 10; i++) await Promise.all(Array.from({ length: 10 }, () => get('/v1/uuid')));
      await get('/v1/uuid?count=200');
      await get('/v1/uuid?version=4&count=70');
      await get('/v1/uuid?format=ulid&count=5');
      const m = series(await get('/metrics'), 'sequoia_ids_issued_total');
      expect(m.get('{generator="segment",tag="order"}')).toBe(2000);
      expect(m.get('{generator="snowflake",layout="leaf"}')).toBe(1000);
      expect(m.get('{generator="snowflake",layout="twitter"}')).toBe(1000);
      expect(m.get('{generator="uuid",layout="v7"}')).toBe(300);
      expect(m.get('{generator="uuid",layout="v4"}')).toBe(70);
      expect(m.get('{generator="uuid",layout="ulid"}')).toBe(5);
      expect([...m.keys()].filter((k) => k.includes('tag=""'))).toEqual([]);
    }, 60_000);
  });
}
