/**
 * The state dir's own `state.db` replaced by rename (or moved away) under a
 * running server (issue 40 item 9). Before, the server kept writing marks
 * into the file it had open, in no directory any more, and served on: the
 * marks of the IDs it handed out were lost at its next start. Now, once its
 * buffer is used up, it refuses (503 STORE_UNAVAILABLE, the log naming the
 * replaced file) rather than record a mark nobody will read, and serves again
 * when the file it opened is back; /readyz says so too. Real processes on
 * real files.
 */
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function setUp(): Promise<{ dir: string; state: string; server: ServerProcess }> {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-replaced-'));
  dirs.push(dir);
  const store = `sqlite:${join(dir, 'ids.db')}`;
  expect(sequoia(['tag', 'create', 't', '--step', '10', '--store', store]).status).toBe(0);
  const state = join(dir, 'state');
  const server = await startServe(['--store', store, '--state-dir', state, '--max-step', '10'], { SEQUOIA_WORKERS: '1' });
  running.push(server);
  return { dir, state, server };
}

/** `n` IDs in batches of 10: the IDs and the error answers. */
async function take(s: ServerProcess, n: number): Promise<{ ids: string[]; errors: string[] }> {
  const ids: string[] = [];
  const errors: string[] = [];
  for (let i = 0; i < n / 10; i++) {
    const r = await fetch(`${s.url}/v1/segment/t?count=10`);
    const text = await r.text();
    if (r.status === 200) ids.push(...(JSON.parse(text) as { ids: string[] }).ids);
    else errors.push(`${r.status} ${text}`);
  }
  return { ids, errors };
}

function markOf(file: string): string | undefined {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT mark FROM marks WHERE tag = ?').get('t') as { mark: string } | undefined)?.mark;
  } finally {
    db.close();
  }
}

describe("the state dir's state.db replaced or moved under a running server", () => {
  it('replaced by rename (a restore): refused once the buffer is used up, nothing recorded in a file in no directory', async () => {
    const { dir, state, server } = await setUp();
    expect((await take(server, 50)).errors).toEqual([]);
    const file = join(state, 'state.db');
    const backup = join(dir, 'state-backup.db');
    const src = new Database(file);
    await src.backup(backup);
    src.close();
    const restoredMark = markOf(backup);
    expect(restoredMark).toBeDefined();
    expect((await take(server, 100)).errors).toEqual([]);

    renameSync(backup, file);
    rmSync(`${file}-wal`, { force: true });
    rmSync(`${file}-shm`, { force: true });
    const after = await take(server, 100);
    // What was buffered may still go out; no new range is taken.
    expect(after.ids.length).toBeLessThanOrEqual(20);
    expect(after.errors.length).toBeGreaterThan(0);
    expect(after.errors[0]).toMatch(/^503 .*STORE_UNAVAILABLE/);
    // The client reads no path; the log names the file and why.
    expect(after.errors.join('\n')).not.toContain(state);
    expect(server.output()).toMatch(/the state dir's file \S*state\.db was replaced by another file while this process had it open/);
    // The restored file at the path was not written either.
    expect(markOf(file)).toBe(restoredMark);
    // Not ready: /readyz says what the ID routes do (its state dir probe runs at most once a second).
    await expect.poll(async () => (await fetch(`${server.url}/readyz`)).status, { timeout: 10_000 }).toBe(503);
  }, 120_000);

  it('moved away: refused; moved back: serves again, no ID repeated', async () => {
    const { dir, state, server } = await setUp();
    const before = await take(server, 50);
    expect(before.errors).toEqual([]);
    const file = join(state, 'state.db');
    const moved = join(dir, 'moved.db');
    renameSync(file, moved);
    const gone = await take(server, 100);
    expect(gone.errors.length).toBeGreaterThan(0);
    expect(gone.errors[0]).toMatch(/^503 .*STORE_UNAVAILABLE/);
    expect(server.output()).toMatch(/the state dir's file \S*state\.db was removed while this process had it open/);
    await expect.poll(async () => (await fetch(`${server.url}/readyz`)).status, { timeout: 10_000 }).toBe(503);
    renameSync(moved, file);
    // Retry-After is a second; a refused load is retried on the next request after it.
    await expect.poll(async () => (await take(server, 10)).errors, { timeout: 20_000, interval: 1100 }).toEqual([]);
    await expect.poll(async () => (await fetch(`${server.url}/readyz`)).status, { timeout: 10_000 }).toBe(200);
    const back = await take(server, 50);
    expect(back.errors).toEqual([]);
    const all = [...before.ids, ...gone.ids, ...back.ids];
    expect(new Set(all).size).toBe(all.length);
  }, 120_000);
});
