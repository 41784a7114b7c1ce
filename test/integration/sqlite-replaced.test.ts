/**
 * A SQLite store file replaced under a running server (a restore by rename),
 * or removed. Before the fix the server kept its handle on the old file, gone
 * from every directory: it took ranges nobody else saw, a fence made on the
 * file at the path never reached it, and it handed out the same IDs as a
 * server started on the restored, fenced file (found by an operator's test).
 * Real processes on real files.
 */
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

async function serve(store: string, stateDir: string): Promise<ServerProcess> {
  const s = await startServe(['--store', store, '--state-dir', stateDir, '--max-step', '10']);
  running.push(s);
  return s;
}

/** `n` IDs from the server, in batches of 10; the IDs and the error answers' bodies. */
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

function repeats(ids: string[]): string[] {
  const seen = new Set<string>();
  return ids.filter((id) => seen.has(id) || !seen.add(id));
}

describe('a SQLite store file replaced or removed under a running server', () => {
  it('restored by rename and fenced: the running server takes its ranges from the file now at the path; no ID repeats', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-replaced-'));
    const file = join(dir, 'ids.db');
    const store = `sqlite:${file}`;
    expect(sequoia(['tag', 'create', 't', '--step', '10', '--store', store]).status).toBe(0);
    const a = await serve(store, join(dir, 'a'));
    const all: string[] = [];
    const first = await take(a, 200);
    all.push(...first.ids);

    // A backup, then the store moves on: A hands out IDs the backup does not know of.
    const backup = join(dir, 'backup.db');
    const src = new Database(file);
    await src.backup(backup);
    src.close();
    const second = await take(a, 300);
    all.push(...second.ids);
    const highest = all.map(BigInt).reduce((x, y) => (y > x ? y : x));

    // The restore, by rename, as the docs say; then the fence, above every ID handed out.
    renameSync(backup, file);
    rmSync(`${file}-wal`, { force: true });
    rmSync(`${file}-shm`, { force: true });
    const to = highest + 200n;
    expect(sequoia(['fence', 't', '--to', String(to), '--store', store, '--state-dir', join(dir, 'cli')]).status).toBe(0);

    // A keeps serving, and a second server starts on the restored file.
    const c = await serve(store, join(dir, 'c'));
    const [fromA, fromC] = await Promise.all([take(a, 600), take(c, 600)]);
    all.push(...fromA.ids, ...fromC.ids);
    expect(fromA.errors).toEqual([]);
    expect(fromC.errors).toEqual([]);
    expect(repeats(all)).toEqual([]);
    // A's ranges after its buffer ran out came from the fenced file: above the fence.
    expect(fromA.ids.slice(-100).every((id) => BigInt(id) >= to)).toBe(true);
  }, 120_000);

  it('removed: the server refuses once its buffer is used up (STORE_UNAVAILABLE), creates no empty file, and serves again when the file is back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-removed-'));
    const file = join(dir, 'ids.db');
    const store = `sqlite:${file}`;
    expect(sequoia(['tag', 'create', 't', '--step', '10', '--store', store]).status).toBe(0);
    const a = await serve(store, join(dir, 'a'));
    const before = await take(a, 50);
    expect(before.errors).toEqual([]);
    const moved = join(dir, 'elsewhere.db');
    renameSync(file, moved);
    const gone = await take(a, 100);
    expect(gone.errors.length).toBeGreaterThan(0);
    expect(gone.errors[0]).toMatch(/^503 .*STORE_UNAVAILABLE/);
    expect(existsSync(file)).toBe(false);
    renameSync(moved, file);
    // Retry-After is a second; the next request after it takes a range from the file again.
    await new Promise((r) => setTimeout(r, 1100));
    const back = await take(a, 50);
    expect(back.errors).toEqual([]);
    expect(repeats([...before.ids, ...gone.ids, ...back.ids])).toEqual([]);
  }, 120_000);
});
