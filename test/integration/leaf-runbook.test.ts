/**
 * Issue 24 and issue 40 item 2: docs/migrate.md's Leaf segment runbook,
 * rehearsed end to end on real PostgreSQL and MariaDB, cut-over included. A
 * leaf_alloc table with data; Leaf stand-ins (its DAO SQL and transaction,
 * test/helpers/leaf-standin.ts) and a Sequoia server with a state dir on that
 * table hand out IDs side by side; one stand-in is stopped, the other is
 * forgotten; the Sequoia server is stopped (a clean shutdown gives its
 * unused tail back to Leaf's row). Then step 5's lines, as the page writes
 * them: `sequoia migrate … --dry-run`, `sequoia migrate … --state-dir DIR`
 * (copies the tags, retires Leaf's rows: the forgotten stand-in's next load
 * fails; moves the dir), and `sequoia serve --store NEW --state-dir DIR`
 * with the same dir, which before was refused at start ("this state dir
 * belongs to store …") and now hands out IDs above every ID issued before.
 * No ID appears twice across everything issued.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { uniqueName } from '../contract/backends.js';
import { assertBuilt, BIN, launchServe, ROOT, type ServerProcess, sequoia } from '../helpers/cli.js';
import { expectNoOverlap, LEAF, peerStoreUrl, serveBeside } from '../helpers/peer-schemas.js';
import { SQL_DATABASES } from '../helpers/sql-databases.js';
import { describeWithService } from '../helpers/services.js';
import { type StandIn, startStandIn } from '../helpers/standin-process.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Step 5's command lines, from the page's code block that names this test, split into words ("…" kept whole). */
function step5Lines(): string[][] {
  const text = readFileSync(join(ROOT, 'docs/migrate.md'), 'utf8');
  const lines: string[][] = [];
  for (const block of text.matchAll(/```[a-z]*\n([\s\S]*?)```/g)) {
    if (!(block[1] as string).includes('leaf-runbook.test.ts')) continue;
    for (const line of (block[1] as string).split('\n').map((l) => l.trim())) {
      if (line.startsWith('sequoia ')) lines.push([...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => (m[1] ?? m[2]) as string));
    }
  }
  return lines;
}
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
    it('Leaf table with data → Sequoia beside Leaf → one Leaf forgotten → migrate --state-dir → serve on the new store, same dir → no ID twice', async () => {
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

        // 4. retire one Leaf server; the other one is forgotten and keeps loading
        const [stopped, forgotten] = leafs as [StandIn, StandIn];
        stopped.child.kill('SIGTERM');
        // (a stand-in prints each segment before it hands out any of it: a kill loses none)
        await stopped.exited;
        expect(stopped.stderr()).toBe('');
        stop = true;
        await drawing;
        // 5. this host's server stops
        onLeaf.child.kill('SIGTERM');
        expect(await onLeaf.exited).toBe(0);

        // the page's lines, its placeholders made this test's
        const stateDir = join(base, 'state-leaf');
        const lines = step5Lines().map((words) =>
          words.map((w) =>
            w === '$DB?schema=leaf&table=leaf_alloc' ? leafUrl : w === '$NEW' ? sqlite : w === '/var/lib/sequoia' ? stateDir : w,
          ),
        );
        expect(lines.map((l) => l.slice(0, 2).join(' '))).toEqual(['sequoia migrate', 'sequoia migrate', 'sequoia serve']);
        const [dryLine, migrateLine, serveLine] = lines as [string[], string[], string[]];

        // the wedge this step had: the page's serve line, run before the dir is moved, is refused at start
        const wedged = sequoia([...serveLine.slice(1), '--port', '0']);
        expect(wedged.status).toBe(2);
        expect(wedged.stderr).toContain('belongs to store');

        const dry = sequoia(dryLine.slice(1));
        expect(dry.status, dry.stderr).toBe(0);
        expect(dry.stdout).toMatch(
          /order:pay: source next ID \d+, step 30; would create at \d+; would retire source row \(as order:pay#sequoia-retired\)/,
        );
        const run = sequoia(migrateLine.slice(1));
        expect(run.status, run.stderr).toBe(0);
        expect(run.stdout).toMatch(/user: source next ID \d+.*, step 10; created at \d+.*; source row retired \(as user#sequoia-retired\)/);
        expect(run.stdout).toContain(`state dir ${stateDir}: moved to store`);
        // the forgotten Leaf server's next load finds no row: it stops, loudly
        const forgottenExit = await forgotten.exited;
        expect(forgottenExit).not.toBe(0);
        expect(forgotten.stderr()).toContain('leaf: no row for');
        TAGS.forEach((t, i) => leafRanges.get(t)?.push(...(leafs[i] as StandIn).ranges));
        const again = sequoia(migrateLine.slice(1));
        expect(again.status, again.stderr).toBe(0);
        expect(again.stdout.match(/unchanged; source row retired earlier/g)).toHaveLength(2);
        expect(again.stdout).toContain('already bound to store');

        // the new store takes over, with the same state dir
        const onSqlite = await launchServe(
          process.execPath,
          [BIN, ...serveLine.slice(1), '--port', '0', '--max-step', '64', '--shutdown-timeout-ms', '2000'],
          {
            env: { SEQUOIA_WORKERS: '1' },
            startTimeoutMs: 60_000,
          },
        );
        servers.add(onSqlite);
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
          // above everything issued before the cut-over, Leaf's and Sequoia's
          const earlier = [...before.map(BigInt), ...ranges.map(([, end]) => end - 1n)].reduce((a, b) => (a > b ? a : b));
          for (const id of after) expect(BigInt(id)).toBeGreaterThan(earlier);
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
