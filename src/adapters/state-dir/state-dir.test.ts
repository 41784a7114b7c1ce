import { mkdirSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { StateDir, StateDirReader } from './state-dir.js';

const hex = (tag: string) => Buffer.from(tag, 'utf8').toString('hex');

describe('StateDir (a real SQLite file)', () => {
  it('takes over the per-file marks of earlier versions once, keeping the highest and any trip', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-'));
    mkdirSync(join(dir, 'hwm'), { recursive: true });
    mkdirSync(join(dir, 'workers', '0', 'hwm'), { recursive: true });
    mkdirSync(join(dir, 'workers', '1', 'hwm'), { recursive: true });
    writeFileSync(join(dir, 'hwm', `${hex('order')}.json`), JSON.stringify({ mark: '100' }));
    writeFileSync(join(dir, 'workers', '0', 'hwm', `${hex('order')}.json`), JSON.stringify({ mark: '10100' }));
    writeFileSync(join(dir, 'workers', '1', 'hwm', `${hex('order')}.json`), JSON.stringify({ mark: '300', trippedAtEpoch: 2 }));
    writeFileSync(join(dir, 'workers', '1', 'hwm', `${hex('..')}.json`), JSON.stringify({ mark: '7' }));
    const s = new StateDir(dir);
    expect(await s.get('order')).toEqual({ mark: 10100n, trippedAtEpoch: 2 });
    expect(await s.get('..')).toEqual({ mark: 7n, trippedAtEpoch: undefined });
    await s.put('order', { mark: 5n });
    await s.close();
    // once: a second open does not take the old files over again
    expect(await new StateDir(dir).get('order')).toEqual({ mark: 5n, trippedAtEpoch: undefined });
  });

  it('shares marks between handles (processes) and keys them by the tag, whatever its length', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-'));
    const a = new StateDir(dir);
    const b = new StateDir(dir);
    const tag = 'x'.repeat(128);
    await a.update(tag, (cur) => ({ mark: (cur?.mark ?? 0n) + 100n }));
    await b.update(tag, (cur) => ({ mark: (cur?.mark ?? 0n) + 100n }));
    expect((await a.get(tag))?.mark).toBe(200n);
    expect(await b.update(tag, (cur) => cur)).toEqual({ mark: 200n, trippedAtEpoch: undefined });
  });

  it('refuses every operation once state.db is another file (renamed onto it) or gone, and serves again when it is back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-'));
    const s = new StateDir(dir);
    await s.put('t', { mark: 10n });
    const other = new StateDir(mkdtempSync(join(tmpdir(), 'sequoia-state-other-')));
    await other.close();
    renameSync(join(dir, 'state.db'), join(dir, 'moved.db'));
    await expect(s.put('t', { mark: 20n })).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', message: /state\.db was removed while/ });
    renameSync(other.path, join(dir, 'state.db'));
    for (const op of [
      () => s.get('t'),
      () => s.put('t', { mark: 20n }),
      () => s.recordTick('twitter', 1, 5),
      () => s.lastTick('twitter', 1),
    ]) {
      await expect(op()).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', message: /state\.db was replaced by another file while/ });
    }
    renameSync(join(dir, 'state.db'), other.path);
    renameSync(join(dir, 'moved.db'), join(dir, 'state.db'));
    await s.put('t', { mark: 30n });
    expect(await s.get('t')).toEqual({ mark: 30n, trippedAtEpoch: undefined });
    await s.close();
  });

  it('raises a tick, or sets it exactly on release', async () => {
    const s = new StateDir(mkdtempSync(join(tmpdir(), 'sequoia-state-')));
    expect(await s.lastTick('space', 1)).toBeUndefined();
    await s.recordTick('space', 1, 500);
    await s.recordTick('space', 1, 400);
    expect(await s.lastTick('space', 1)).toBe(500);
    await s.recordTick('space', 1, 450, true);
    expect(await s.lastTick('space', 1)).toBe(450);
    expect(await s.lastTick('space', 2)).toBeUndefined();
    // A lineage's start check reads the highest tick of a space, whichever worker id issued it.
    await s.recordTick('space', 2, 700);
    expect(await s.highestTick('space')).toBe(700);
    expect(await s.highestTick('other')).toBeUndefined();
  });

  it('belongs to one store: bound on first use, another store refused by name (the CLI only checks)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-'));
    const s = new StateDir(dir);
    await s.bindStore('sqlite:/a.db', false); // a check binds nothing
    expect(await s.boundStore()).toBeUndefined();
    await s.bindStore('sqlite:/a.db', true);
    await s.bindStore('sqlite:/a.db', true);
    await expect(s.bindStore('sqlite:/b.db', false)).rejects.toThrow(/belongs to store sqlite:\/a\.db, not to sqlite:\/b\.db/);
    await s.close();
    await expect(new StateDir(dir).bindStore('sqlite:/b.db', true)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('runs one change at a time, even when a change awaits (as across threads)', async () => {
    const s = new StateDir(mkdtempSync(join(tmpdir(), 'sequoia-state-')));
    const slowly = (cur: { mark: bigint } | undefined) =>
      new Promise<{ mark: bigint }>((r) => setTimeout(() => r({ mark: (cur?.mark ?? 0n) + 1n }), 5));
    await Promise.all(Array.from({ length: 10 }, () => s.update('t', slowly)));
    expect((await s.get('t'))?.mark).toBe(10n);
    // a change that throws leaves nothing behind, and the next one runs
    await expect(s.update('t', () => Promise.reject(new Error('no')))).rejects.toThrow();
    expect((await s.update('t', (cur) => ({ mark: (cur?.mark ?? 0n) + 1n })))?.mark).toBe(11n);
  });

  it("admits a range with the guard's rule in its own transaction: raised, kept when another handle raised it higher, a rollback recorded", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-'));
    const s = new StateDir(dir);
    expect(await s.admitRange('t', undefined, 0n, 10n, 0)).toEqual({ ok: true, record: { mark: 10n } });
    // another process, answered [20, 30) later but recorded first
    await new StateDir(dir).put('t', {
      mark: 30n,
      ranges: [
        [0n, 10n],
        [20n, 30n],
      ],
    });
    expect(await s.admitRange('t', { mark: 10n }, 10n, 20n, 0)).toEqual({ ok: true, record: { mark: 30n } });
    expect(await s.get('t')).toEqual({ mark: 30n, trippedAtEpoch: undefined });
    const refused = await s.admitRange('t', { mark: 30n }, 5n, 8n, 2);
    expect(refused).toMatchObject({ ok: false, record: { mark: 30n, trippedAtEpoch: 2 } });
    expect(refused.ok ? '' : refused.reason).toContain(`kept in state dir ${dir}`);
    expect(await s.get('t')).toEqual({ mark: 30n, trippedAtEpoch: 2 });
  });

  it('keeps the creation a trip was recorded under, and opens a state.db of an earlier version (no such column): its trips keep none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-'));
    const old = new Database(join(dir, 'state.db'));
    old.exec('CREATE TABLE marks (tag TEXT PRIMARY KEY NOT NULL, mark TEXT NOT NULL, tripped_at_epoch INTEGER)');
    old.prepare('INSERT INTO marks (tag, mark, tripped_at_epoch) VALUES (?, ?, ?)').run('old', '40', 2);
    old.close();
    const s = new StateDir(dir);
    expect(await s.get('old')).toEqual({ mark: 40n, trippedAtEpoch: 2 });
    expect((await s.get('old'))?.trippedGeneration).toBeUndefined();
    const refused = await s.admitRange('t', { mark: 30n }, 5n, 8n, 1, '77');
    expect(refused).toMatchObject({ ok: false, record: { mark: 30n, trippedAtEpoch: 1, trippedGeneration: '77' } });
    expect(await new StateDir(dir).get('t')).toEqual({ mark: 30n, trippedAtEpoch: 1, trippedGeneration: '77' });
    const reader = new StateDirReader(dir);
    expect(reader.get('t')).toEqual({ mark: 30n, trippedAtEpoch: 1, trippedGeneration: '77' });
    reader.close();
    // lifted by a later creation's fence: the trip and its creation go together
    expect(await s.admitRange('t', { mark: 30n }, 30n, 40n, 1, '78')).toEqual({ ok: true, record: { mark: 40n } });
    expect(await s.get('t')).toEqual({ mark: 40n, trippedAtEpoch: undefined });
    await s.close();
  });

  it('keeps the accepted ranges across a reopen; over one of them is a rollback whatever the floor', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-'));
    const s = new StateDir(dir);
    expect(await s.admitRange('t', undefined, 100n, 200n, 0)).toEqual({ ok: true, record: { mark: 200n, ranges: [[100n, 200n]] } });
    expect(await s.admitRange('t', { mark: 200n }, 300n, 400n, 0)).toMatchObject({ ok: true });
    await s.close();
    const again = new StateDir(dir);
    expect(await again.get('t')).toEqual({
      mark: 400n,
      ranges: [
        [100n, 200n],
        [300n, 400n],
      ],
    });
    const reader = new StateDirReader(dir);
    expect(reader.get('t')).toEqual({
      mark: 400n,
      ranges: [
        [100n, 200n],
        [300n, 400n],
      ],
    });
    reader.close();
    // [200, 300) was another server's: answered to a request sent before our [300, 400) was recorded, it passes
    expect(await again.admitRange('t', { mark: 200n }, 200n, 300n, 0)).toEqual({
      ok: true,
      record: { mark: 400n, ranges: [[100n, 400n]] },
    });
    // a floor read before anything was recorded (another worker's range) does not let an overlap through
    expect(await again.admitRange('t', undefined, 150n, 160n, 0)).toMatchObject({ ok: false, record: { trippedAtEpoch: 0 } });
    await again.close();
  });

  it('loads a state dir of the previous release (no ranges column): everything below its mark counts, and it gains ranges', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-'));
    mkdirSync(dir, { recursive: true });
    const old = new Database(join(dir, 'state.db'));
    old.exec('CREATE TABLE marks (tag TEXT PRIMARY KEY NOT NULL, mark TEXT NOT NULL, tripped_at_epoch INTEGER)');
    old.exec('CREATE TABLE ticks (space TEXT NOT NULL, worker_id INTEGER NOT NULL, tick INTEGER NOT NULL, PRIMARY KEY (space, worker_id))');
    old.exec('CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)');
    old.prepare("INSERT INTO meta (key, value) VALUES ('legacy-marks', '2026-01-01T00:00:00.000Z')").run();
    old.prepare("INSERT INTO marks (tag, mark, tripped_at_epoch) VALUES ('t', '500', NULL), ('u', '70', 4)").run();
    old.close();
    const s = new StateDir(dir);
    expect(await s.get('t')).toEqual({ mark: 500n, trippedAtEpoch: undefined });
    expect(await s.get('u')).toEqual({ mark: 70n, trippedAtEpoch: 4 });
    expect(await s.admitRange('t', undefined, 400n, 450n, 0)).toMatchObject({ ok: false });
    expect(await s.admitRange('u', undefined, 600n, 700n, 5)).toEqual({
      ok: true,
      record: {
        mark: 700n,
        ranges: [
          [0n, 70n],
          [600n, 700n],
        ],
      },
    });
    // The previous release, run on the dir again, moves the mark and leaves the ranges behind: they no longer count.
    await s.close();
    const back = new Database(join(dir, 'state.db'));
    back.prepare("UPDATE marks SET mark = '800' WHERE tag = 'u'").run();
    back.close();
    const s2 = new StateDir(dir);
    expect(await s2.admitRange('u', undefined, 650n, 660n, 5)).toMatchObject({ ok: false });
    expect(await s2.admitRange('u', { mark: 800n }, 800n, 900n, 6)).toMatchObject({ ok: true, record: { mark: 900n } }); // fenced since
    await s2.close();
  });

  it('a reader answers the last committed mark at once while a write holds the lock, and undefined (the caller asks the worker) when it cannot read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-'));
    const s = new StateDir(dir);
    await s.put('t', { mark: 10n, trippedAtEpoch: 3 });
    const reader = new StateDirReader(dir);
    expect(reader.get('t')).toEqual({ mark: 10n, trippedAtEpoch: 3 });
    expect(reader.get('none')).toBeNull();
    // A write in progress (BEGIN IMMEDIATE, uncommitted): the committed mark, not the pending one.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const writing = s.update('t', async () => {
      await gate;
      return { mark: 20n };
    });
    await new Promise((r) => setImmediate(r));
    expect(reader.get('t')).toEqual({ mark: 10n, trippedAtEpoch: 3 });
    open();
    await writing;
    expect(reader.get('t')).toEqual({ mark: 20n, trippedAtEpoch: undefined });
    await s.close();
    // A read that fails (here the table is gone) answers undefined, not an error.
    const other = new Database(join(dir, 'state.db'));
    other.exec('DROP TABLE marks');
    other.close();
    expect(reader.get('t')).toBeUndefined();
    reader.close();
  });
});
