/**
 * The conflict alarm pages, so it counts only a report that can be true
 * (issue 40 item 7): on a real `sequoia serve`, an id that is no ID is 400
 * INVALID_ARGUMENT and a tag that does not exist is 404 TAG_NOT_FOUND, and
 * neither creates a series of sequoia_business_conflicts_total. `__proto__`
 * is a legal tag: once created, its reports count like any other's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sequoia, startServe, type ServerProcess } from '../helpers/cli.js';

const ADMIN = 'conflict-input-admin-token';
const headers = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };

describe('POST /v1/tags/{tag}/conflicts refuses what cannot be a conflict', () => {
  let server: ServerProcess;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sequoia-conflict-input-'));
    server = await startServe(['--store', `sqlite:${join(dir, 's.db')}`, '--state-dir', dir, '--admin-token', ADMIN], {
      SEQUOIA_WORKERS: '1',
    });
  });
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  const report = async (tag: string, id: unknown) => {
    const r = await fetch(`${server.url}/v1/tags/${encodeURIComponent(tag)}/conflicts`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ id }),
    });
    return { status: r.status, body: (await r.json()) as { error?: { code: string; message: string }; conflicts?: number } };
  };
  const conflictSeries = async () =>
    (await (await fetch(`${server.url}/metrics`, { headers })).text())
      .split('\n')
      .filter((l) => l.startsWith('sequoia_business_conflicts_total{'));

  it('ids outside 0..2^63-1 and non-integers: 400; unknown tags (nope, __proto__): 404; no series', async () => {
    expect((await fetch(`${server.url}/v1/tags`, { method: 'POST', headers, body: '{"tag":"orders"}' })).status).toBe(201);
    for (const id of ['abc', '-1', '9223372036854775808', '1.5', '', ' 1', '01', 2 ** 53 + 2, -1, 1.5]) {
      const r = await report('orders', id);
      expect(r.status, JSON.stringify(id)).toBe(400);
      expect(r.body.error?.code, JSON.stringify(id)).toBe('INVALID_ARGUMENT');
    }
    for (const tag of ['nope', '__proto__', 'constructor']) {
      const r = await report(tag, '1');
      expect(r.status, tag).toBe(404);
      expect(r.body.error?.code, tag).toBe('TAG_NOT_FOUND');
    }
    expect(await conflictSeries()).toEqual([]);
    expect(server.output()).not.toMatch(/business unique-key conflict reported/);
  });

  it('a real report still counts, at both ends of the ID space; __proto__ once it exists', async () => {
    expect((await report('orders', '9223372036854775807')).status).toBe(202);
    expect((await report('orders', 0)).status).toBe(202);
    expect((await fetch(`${server.url}/v1/tags`, { method: 'POST', headers, body: '{"tag":"__proto__"}' })).status).toBe(201);
    const r = await report('__proto__', '1');
    expect(r).toEqual({ status: 202, body: { tag: '__proto__', id: '1', conflicts: 1 } });
    // A tag made elsewhere (not yet on this server's list) is looked up in the store.
    expect(sequoia(['tag', 'create', 'elsewhere', '--store', `sqlite:${join(dir, 's.db')}`]).status).toBe(0);
    expect((await report('elsewhere', '5')).status).toBe(202);
    expect((await conflictSeries()).sort()).toEqual([
      'sequoia_business_conflicts_total{tag="__proto__"} 1',
      'sequoia_business_conflicts_total{tag="elsewhere"} 1',
      'sequoia_business_conflicts_total{tag="orders"} 2',
    ]);
  });
});
