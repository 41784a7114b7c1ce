/**
 * `sequoia migrate --state-dir`: the dir moves from the old store to the new
 * one with its marks; a trip recorded against the old store's fence epochs
 * is cleared (the new store's epochs start again); a dir of a third store is
 * refused and left as it was.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { StateDir } from './state-dir.js';

it('moves to the new store with its marks, trips cleared; refuses a third store', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-rebind-'));
  const s = new StateDir(dir);
  try {
    await s.bindStore('postgres://app@db:5432/ids?table=leaf_alloc', true);
    await s.put('order', { mark: 5000n, trippedAtEpoch: 3 });
    await s.put('user#3:2', { mark: 700n });
    expect(await s.allMarks()).toEqual(
      new Map([
        ['order', { mark: 5000n, trippedAtEpoch: 3 }],
        ['user#3:2', { mark: 700n, trippedAtEpoch: undefined }],
      ]),
    );

    await expect(s.rebindStore('sqlite:/elsewhere.db', 'sqlite:/new.db')).rejects.toThrow(
      /belongs to store postgres:\/\/app@db:5432\/ids\?table=leaf_alloc/,
    );
    expect(await s.boundStore()).toBe('postgres://app@db:5432/ids?table=leaf_alloc');
    expect(await s.get('order')).toEqual({ mark: 5000n, trippedAtEpoch: 3 });

    expect(await s.rebindStore('postgres://app@db:5432/ids?table=leaf_alloc', 'sqlite:/new.db')).toBe('rebound');
    expect(await s.boundStore()).toBe('sqlite:/new.db');
    expect(await s.get('order')).toEqual({ mark: 5000n, trippedAtEpoch: undefined });
    expect(await s.get('user#3:2')).toEqual({ mark: 700n, trippedAtEpoch: undefined });
    // again (migrate run once more): nothing to do
    expect(await s.rebindStore('postgres://app@db:5432/ids?table=leaf_alloc', 'sqlite:/new.db')).toBe('bound');
    await expect(s.bindStore('sqlite:/new.db', false)).resolves.toBeUndefined();
  } finally {
    await s.close();
  }
});
