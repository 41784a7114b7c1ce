/**
 * Issue 24: docs/migrate.md's Leaf segment runbook, rehearsed end to end on
 * real PostgreSQL and MariaDB. A leaf_alloc table with data; a Leaf stand-in
 * (its DAO SQL and transaction, test/helpers/leaf-standin.ts) and a Sequoia
 * server on that table hand out IDs side by side; the stand-in is stopped,
 * then the Sequoia server (a clean shutdown gives its unused tail back to
 * Leaf's row); `sequoia migrate` copies the tags into SQLite with no margin
 * at all (a second run changes nothing); a Sequoia server on SQLite hands out
 * more. No ID appears twice across everything issued.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { uniqueName } from '../contract/backends.js';
import { assertBuilt, type ServerProcess, sequoia } from '../helpers/cli.js';
import { expectNoOverlap, LEAF, peerStoreUrl, serveBeside } from '../helpers/peer-schemas.js';
import { SQL_DATABASES } from '../helpers/sql-databases.js';
import { describeWithService } from '../helpers/services.js';
import { type StandIn, startStandIn } from '../helpers/standin-process.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TAGS = ['order:pay', 'user'];

const servers = new Set<ServerProcess>();
const standIns = new Set<StandIn>();
afterAll(() => {
  for (const s of servers) s.child.kill('SIGKILL');
  for (const s of standIns) s.child.kill('SIGKILL');
});

/** Takes IDs of every tag from a server until `stop()` says so, through Leaf's route and the batch route. */
async function draw(s: ServerProcess, ids: Map<string, string[]>, stop: () => boolean): Promise<void> {
  let i = 0;
  while (!stop()) {
    const tag = TAGS[i % TAGS.length] as string;
    const leafRoute = i++ % 3 === 0;
    const res = await fetch(leafRoute ? `${s.url}/api/segment/get/${tag}` : `${s.url}/v1/segment/${tag}?count=${1 + (i % 7)}`);
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const got = leafRoute ? [text] : (JSON.parse(text) as { ids: string[] }).ids;
    ids.get(tag)?.push(...got);
  }
}

for (const kind of SQL_DATABASES) {
  const describeStore = await describeWithService(kind.service, kind.probe);
  describeStore(`the Leaf runbook, rehearsed: ${kind.name}`, () => {
    it('Leaf table with data → Sequoia beside Leaf → Leaf stopped → sequoia migrate to SQLite → no ID twice', async () => {
      assertBuilt();
      const table = uniqueName('t_leaf_alloc');
      const side = uniqueName('sq_side');
      await kind.exec(LEAF.ddl(kind.name, table));
      const base = mkdtempSync(join(tmpdir(), `sequoia-runbook-${kind.name}-`));
      const leafUrl = peerStoreUrl(kind.url, LEAF, { table, side });
      const sqlite = `sqlite:${join(base, 'ids.db')}`;
      const ids = new Map(TAGS.map((t) => [t, [] as string[]]));
      const leafRanges = new Map(TAGS.map((t) => [t, [] as Array<[bigint, bigint]>]));
      try {
        // a Leaf table with data: tags that Leaf servers have used for a while
        await kind.exec(
          `INSERT INTO ${table} (biz_tag, max_id, step, description) VALUES ('order:pay', 1000001, 30, 'orders'), ('user', 5001, 10, 'users')`,
        );

        // 1-2. Sequoia beside Leaf on its table
        const onLeaf = await serveBeside(leafUrl, join(base, 'state-leaf'), servers);
        const leafs = TAGS.map((t) => {
          const p = startStandIn(LEAF.standIn, [kind.name, kind.url, table, t]);
          standIns.add(p);
          return p;
        });
        let stop = false;
        const drawing = draw(onLeaf, ids, () => stop);
        // both sides busy for a while (a start takes seconds on a loaded machine)
        const busyBy = Date.now() + 90_000;
        while (Date.now() < busyBy && (leafs.some((l) => l.ranges.length < 8) || TAGS.some((t) => (ids.get(t)?.length ?? 0) < 30)))
          await sleep(200);

        // 4. retire Leaf, then (5) stop writing to its table: every server stops
        for (const l of leafs) l.child.kill('SIGTERM');
        // (a stand-in prints each segment before it hands out any of it: a kill loses none)
        await Promise.all(leafs.map((l) => l.exited));
        for (const l of leafs) expect(l.stderr()).toBe('');
        TAGS.forEach((t, i) => leafRanges.get(t)?.push(...(leafs[i] as StandIn).ranges));
        stop = true;
        await drawing;
        onLeaf.child.kill('SIGTERM');
        expect(await onLeaf.exited).toBe(0);

        // 5. copy the tags into SQLite, with no margin: the copy alone must start above everything issued
        const dry = sequoia(['migrate', '--from', leafUrl, '--store', sqlite, '--margin', '0', '--dry-run']);
        expect(dry.status, dry.stderr).toBe(0);
        expect(dry.stdout).toMatch(/order:pay: source next ID \d+, step 30; would create at \d+/);
        const run = sequoia(['migrate', '--from', leafUrl, '--store', sqlite, '--margin', '0']);
        expect(run.status, run.stderr).toBe(0);
        expect(run.stdout).toMatch(/user: source next ID \d+, step 10; created at \d+/);
        const again = sequoia(['migrate', '--from', leafUrl, '--store', sqlite, '--margin', '0']);
        expect(again.stdout.match(/unchanged/g)).toHaveLength(2);

        // Sequoia on SQLite takes over
        const onSqlite = await serveBeside(sqlite, join(base, 'state-sqlite'), servers);
        stop = false;
        const more = new Map(TAGS.map((t) => [t, [] as string[]]));
        const drawing2 = draw(onSqlite, more, () => stop);
        const drawnBy = Date.now() + 60_000;
        while (Date.now() < drawnBy && TAGS.some((t) => (more.get(t)?.length ?? 0) < 30)) await sleep(200);
        stop = true;
        await drawing2;
        onSqlite.child.kill('SIGTERM');
        expect(await onSqlite.exited).toBe(0);

        for (const t of TAGS) {
          const before = ids.get(t) as string[];
          const after = more.get(t) as string[];
          const ranges = leafRanges.get(t) as Array<[bigint, bigint]>;
          console.log(
            `[runbook ${kind.name}] ${t}: ${ranges.length} Leaf segments, ${before.length} Sequoia IDs on Leaf's table, ${after.length} on SQLite`,
          );
          expect(ranges.length).toBeGreaterThan(5);
          expect(before.length).toBeGreaterThan(20);
          expect(after.length).toBeGreaterThan(20);
          const all = [...before, ...after];
          expect(new Set(all).size).toBe(all.length);
          expectNoOverlap([...ranges, ...all.map((id): [bigint, bigint] => [BigInt(id), BigInt(id) + 1n])]);
        }
      } finally {
        for (const s of servers) s.child.kill('SIGKILL');
        for (const s of standIns) s.child.kill('SIGKILL');
        await kind.exec(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
        await kind.exec(`DROP TABLE IF EXISTS ${side}`).catch(() => {});
      }
    }, 240_000);
  });
}
