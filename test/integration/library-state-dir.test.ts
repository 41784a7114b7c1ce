/**
 * The README's library snippet run in a folder where `sequoia serve` keeps
 * ./data (issue 26): a state dir a server bound to its store refuses an
 * IdService of another store, naming both, instead of reading the server's
 * marks against the other store's counters (a false STORE_ROLLBACK_DETECTED
 * that advised `sequoia fence`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileHighWaterMarkStore, IdService, SqliteSegmentStore } from '../../src/app/index.js';
import { sequoia, startServe } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'sequoia-libdir-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const service = (db: string, state: string) =>
  new IdService({ store: new SqliteSegmentStore({ path: db }), marks: new FileHighWaterMarkStore(state) });

describe("a library IdService on a server's state dir", () => {
  it('is refused when the dir belongs to another store, and works on its own store or its own dir', async () => {
    const data = join(dir, 'data');
    const serverDb = join(data, 'sequoia.db');
    // The Quick start: a server on ./data hands out IDs of "order", then stops.
    const server = await startServe(['--store', `sqlite:${serverDb}`, '--state-dir', data]);
    try {
      expect(sequoia(['tag', 'create', 'order', '--store', `sqlite:${serverDb}`]).status).toBe(0);
      expect(await (await fetch(`${server.url}/api/segment/get/order`)).text()).toBe('1');
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }

    const other = service(join(data, 'ids.db'), data);
    const e = (await other.start().then(
      () => undefined,
      (x: unknown) => x,
    )) as { code?: string; message?: string } | undefined;
    await other.close().catch(() => {});
    expect(e?.code).toBe('INVALID_ARGUMENT');
    expect(e?.message).toContain(`belongs to store sqlite:${serverDb}, not to sqlite:${join(data, 'ids.db')}`);

    // Its own directory (as the README's snippet now has) works.
    const own = service(join(dir, 'lib-data', 'ids.db'), join(dir, 'lib-data'));
    await own.start();
    await own.ensureTag({ tag: 'order', step: 1000 });
    expect(await own.next('order')).toBe(1);
    await own.close();

    // The server's own store through the library is that store: accepted.
    const same = service(serverDb, data);
    await same.start();
    expect(await same.next('order')).toBeGreaterThan(1);
    await same.close();
  });
});
