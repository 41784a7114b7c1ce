/**
 * Issue 28, item 1: a give-back into a re-created tag (real processes, one
 * SQLite file, the CLI's `tag delete` / `tag create --start`).
 *
 * Server P serves a tag of step 100 and holds [1,101) and [101,201). The tag is
 * deleted and created again with `--start 101` (above every ID handed out).
 * Server Q serves 101–105 from [101,201), leaving max_id 201. P's clean
 * shutdown (SIGTERM) gives back its unused tail: its compare-and-set on
 * (max_id 201, fence epoch 0) matched the NEW tag, max_id went down to 16, and
 * P, restarted, handed out 16–115: 101–105 a second time. A tag's generation
 * (new at every creation) is now part of that compare-and-set.
 *
 * The second case re-creates at `--start 1` (the operator repeats the deleted
 * tag's IDs on purpose); still, nothing P or Q hands out AFTER the re-creation
 * may repeat.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
const dirs: string[] = [];
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function ids(s: ServerProcess, tag: string, count: number): Promise<bigint[]> {
  const r = await fetch(`${s.url}/v1/segment/${tag}?count=${count}`);
  const body = (await r.json()) as { ids?: string[]; error?: unknown };
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${JSON.stringify(body)}`);
  return (body.ids ?? []).map((x) => BigInt(x));
}

/** The tag's row, read straight from the SQLite file (a CLI process per poll is slow on a busy machine). */
function tagRow(file: string, tag: string): { maxId: bigint; generation: string } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    db.defaultSafeIntegers(true);
    const row = db.prepare('SELECT * FROM sequoia_alloc WHERE tag = ?').get(tag) as { max_id: bigint; generation?: bigint } | undefined;
    if (!row) throw new Error(`no tag ${tag}`);
    return { maxId: row.max_id, generation: String(row.generation) };
  } finally {
    db.close();
  }
}

function cli(args: string[]): void {
  const r = sequoia(args);
  expect(r.status, r.stderr).toBe(0);
}

async function waitFor(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function stop(s: ServerProcess): Promise<void> {
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
}

/** The scenario, with the re-creation at `recreateStart`; answers every ID handed out after the re-creation, by server. */
async function scenario(recreateStart: bigint, qCount: number) {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-recreate-'));
  dirs.push(dir);
  const file = join(dir, 'store.db');
  const store = `sqlite:${file}`;
  const tag = 'orders';
  cli(['tag', 'create', tag, '--step', '100', '--store', store]);
  const firstGeneration = tagRow(file, tag).generation;

  // --max-step 100: every range is exactly the stored step, as in the issue.
  const serveP = () => startServe(['--store', store, '--state-dir', join(dir, 'p'), '--max-step', '100']);
  let p = await serveP();
  running.push(p);
  // P hands out 1–15; past 10% of the step it loads [101,201) in the background.
  const pBefore = await ids(p, tag, 15);
  expect(pBefore).toEqual(Array.from({ length: 15 }, (_, i) => BigInt(i + 1)));
  await waitFor('P to hold [101,201)', () => tagRow(file, tag).maxId === 201n);

  cli(['tag', 'delete', tag, '--store', store]);
  cli(['tag', 'create', tag, '--step', '100', '--start', String(recreateStart), '--store', store]);
  const secondGeneration = tagRow(file, tag).generation;

  const q = await startServe(['--store', store, '--state-dir', join(dir, 'q'), '--max-step', '100']);
  running.push(q);
  const qIds = await ids(q, tag, qCount);
  await waitFor('max_id 201 after Q', () => tagRow(file, tag).maxId === 201n);

  // P's clean shutdown: its give-back must not reach the new tag.
  await stop(p);
  const afterStop = tagRow(file, tag);
  p = await serveP();
  running.push(p);
  const pAfter = await ids(p, tag, 100);
  // Q keeps serving what it holds.
  qIds.push(...(await ids(q, tag, 100)));
  await stop(p);
  await stop(q);
  return { pBefore, pAfter, qIds, afterStop, generations: [firstGeneration, secondGeneration] };
}

function repeats(a: bigint[], b: bigint[]): bigint[] {
  const seen = new Set(a.map(String));
  return b.filter((x) => seen.has(String(x)));
}

describe('a give-back never reaches a tag deleted and created again (issue 28, item 1)', () => {
  it("re-created at --start 101: P restarted hands out none of Q's IDs", async () => {
    const { pBefore, pAfter, qIds, afterStop, generations } = await scenario(101n, 5);
    expect(qIds.slice(0, 5)).toEqual([101n, 102n, 103n, 104n, 105n]);
    expect(repeats(qIds, pAfter)).toEqual([]);
    // the give-back was refused: max_id stays where Q left it
    expect(afterStop.maxId).toBe(201n);
    expect(repeats(pBefore, pAfter)).toEqual([]);
    expect(repeats(pBefore, qIds)).toEqual([]);
    expect(new Set(pAfter.map(String)).size).toBe(pAfter.length);
    // what told the two tags apart
    expect(generations[0]).toMatch(/^[1-9][0-9]*$/);
    expect(generations[1]).toMatch(/^[1-9][0-9]*$/);
    expect(generations[1]).not.toBe(generations[0]);
  }, 180_000);

  it('re-created at --start 1: nothing handed out after the re-creation repeats', async () => {
    // Q takes both [1,101) and [101,201) (past 10% it prefetches), so max_id is 201 as P's last range ended.
    const { pAfter, qIds, afterStop } = await scenario(1n, 15);
    expect(repeats(qIds, pAfter)).toEqual([]);
    expect(afterStop.maxId).toBe(201n);
    expect(new Set(pAfter.map(String)).size).toBe(pAfter.length);
  }, 180_000);
});
