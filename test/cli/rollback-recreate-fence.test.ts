/**
 * A rollback refusal across a delete and re-create of the tag, on real
 * processes and a real SQLite store file (sim seed 46, issue 42). A server
 * trips on a store copy restored from an old backup, at fence epoch 2; the
 * operator deletes the tag, creates it again above everything, and fences
 * it from elsewhere (the CLI with its own state dir). The new creation's
 * fence epochs start at 0 again, so that fence is epoch 1: it used to leave
 * the tag refused by that server for good (1 <= 2), running or restarted.
 * The trip now names the creation it was recorded under, and a fence of any
 * later creation lifts it; before that fence the re-created tag is still
 * refused (DESIGN.md: refused until `fence`).
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { assertBuilt, type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
const dirs: string[] = [];
beforeAll(() => assertBuilt());
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** One request for `count` IDs: the IDs, or the error code answered instead. */
async function take(s: ServerProcess, tag: string, count: number): Promise<{ ids: bigint[]; error?: string }> {
  const r = await fetch(`${s.url}/v1/segment/${tag}?count=${count}`);
  const body = (await r.json()) as { ids?: string[]; error?: { code: string } };
  if (r.status !== 200) return { ids: [], error: body.error?.code ?? `HTTP ${r.status}` };
  return { ids: (body.ids ?? []).map((x) => BigInt(x)) };
}

/** The SQLite store's files (the database and, when present, its WAL), copied as a backup is taken or restored. */
function copyStore(from: string, to: string): void {
  for (const suffix of ['', '-wal', '-shm']) {
    rmSync(to + suffix, { force: true });
    if (existsSync(from + suffix)) copyFileSync(from + suffix, to + suffix);
  }
}

async function stop(s: ServerProcess): Promise<void> {
  s.child.kill('SIGTERM');
  expect(await s.exited).toBe(0);
}

it(
  'a fence of the re-created tag reopens it on a server that refused the old creation, running and restarted',
  { timeout: 120_000 },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-refusal-recreate-'));
    dirs.push(dir);
    const db = join(dir, 'ids.db');
    const store = `sqlite:${db}`;
    const ops = ['--store', store, '--state-dir', join(dir, 'operator')]; // the operator's CLI: not the server's marks
    const ok = (args: string[]) => {
      const r = sequoia(args);
      expect(r.status, r.stderr).toBe(0);
      return r;
    };
    ok(['tag', 'create', 't', '--step', '10', '--store', store]);
    ok(['fence', 't', '--to', '1', ...ops]);
    ok(['fence', 't', '--to', '1', ...ops]); // fence epoch 2
    copyStore(db, join(dir, 'backup.db'));

    const serverArgs = ['--store', store, '--state-dir', join(dir, 'server'), '--max-step', '10'];
    const first = await startServe(serverArgs);
    running.push(first);
    const issued = (await take(first, 't', 25)).ids;
    expect(issued).toHaveLength(25);
    await stop(first);

    copyStore(join(dir, 'backup.db'), db); // restored: max_id 1 again, below what the server handed out
    const second = await startServe(serverArgs);
    running.push(second);
    expect(await take(second, 't', 1)).toMatchObject({ error: 'STORE_ROLLBACK_DETECTED' });

    ok(['tag', 'delete', 't', '--store', store]);
    ok(['tag', 'create', 't', '--step', '10', '--start', '1000', '--store', store]);
    // Not fenced yet: still refused, running or restarted.
    expect(await take(second, 't', 1)).toMatchObject({ error: 'STORE_ROLLBACK_DETECTED' });
    await stop(second);
    const third = await startServe(serverArgs);
    running.push(third);
    expect(await take(third, 't', 1)).toMatchObject({ error: 'STORE_ROLLBACK_DETECTED' });

    ok(['fence', 't', '--to', '1000', ...ops]); // the new creation's fence epoch 1
    // The running server re-reads the fence epoch about once a second while refused: bounded by its answers, not a sleep.
    let answer = await take(third, 't', 1);
    for (let i = 0; i < 50 && answer.error === 'STORE_ROLLBACK_DETECTED'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      answer = await take(third, 't', 1);
    }
    expect(answer).toEqual({ ids: [1000n] });
    await stop(third);

    const fourth = await startServe(serverArgs);
    running.push(fourth);
    const after = (await take(fourth, 't', 3)).ids;
    expect(after).toHaveLength(3);
    for (const id of after) expect(id).toBeGreaterThan(1000n);
    await stop(fourth);
  },
);
