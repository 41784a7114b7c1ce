/**
 * HEAD takes no ID (issue 40 item 8; RFC 9110 §9.3.2: HEAD is safe). On a
 * real one-process server: HEADs on every ID route, then a GET, and the GET's
 * ID is the one after the last GET's; the snowflake and UUID counters do not
 * move. A HEAD is answered as its GET would be, without the body: 200 with
 * the GET's content type, and the GET's errors (unknown tag, bad count).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServerProcess } from '../helpers/cli.js';

describe('HEAD on the ID routes', () => {
  let server: ServerProcess;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sequoia-head-'));
    server = await startServe(['--store', `sqlite:${join(dir, 's.db')}`, '--state-dir', dir], { SEQUOIA_WORKERS: '1' });
  });
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  const head = async (path: string) => {
    const r = await fetch(`${server.url}${path}`, { method: 'HEAD' });
    return { status: r.status, type: r.headers.get('content-type'), length: r.headers.get('content-length'), body: await r.text() };
  };
  const issued = async (generator: string): Promise<number> => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    let n = 0;
    for (const m of text.matchAll(new RegExp(`^sequoia_ids_issued_total\\{generator="${generator}"[^}]*\\} (\\d+)$`, 'gm')))
      n += Number(m[1]);
    return n;
  };

  it("segment: 20 HEADs of count=1000 on /v1/segment, and HEADs on Leaf's route, then a GET: the next ID", async () => {
    expect(
      (
        await fetch(`${server.url}/v1/tags`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"tag":"orders","step":1000}',
        })
      ).status,
    ).toBe(201);
    const first = BigInt(await (await fetch(`${server.url}/api/segment/get/orders`)).text());
    const get = await fetch(`${server.url}/v1/segment/orders?count=2`);
    const [a, b] = ((await get.json()) as { ids: string[] }).ids.map(BigInt);
    expect([a, b]).toEqual([first + 1n, first + 2n]);
    for (let i = 0; i < 20; i++) {
      expect(await head('/v1/segment/orders?count=1000')).toEqual({
        status: 200,
        type: get.headers.get('content-type'),
        length: null,
        body: '',
      });
      expect(await head('/api/segment/get/orders')).toMatchObject({ status: 200, type: 'text/plain; charset=utf-8', body: '' });
      expect((await head('/api/segment/get/orders/')).status).toBe(200);
      expect((await head('/v1/segment/orders')).status).toBe(200);
    }
    // The GET's refusals, without a body.
    expect((await head('/v1/segment/nope')).status).toBe(404);
    expect((await head('/api/segment/get/nope')).status).toBe(404);
    expect((await head('/v1/segment/orders?count=10001')).status).toBe(400);
    expect((await head('/v1/segment/orders?format=nope')).status).toBe(400);
    expect(BigInt(await (await fetch(`${server.url}/api/segment/get/orders`)).text())).toBe((b as bigint) + 1n);
    expect(((await (await fetch(`${server.url}/v1/segment/orders`)).json()) as { ids: string[] }).ids).toEqual([
      String((b as bigint) + 2n),
    ]);
  });

  it('snowflake and UUID: HEADs make none', async () => {
    const flake = await fetch(`${server.url}/v1/snowflake?count=3`);
    expect(flake.status).toBe(200);
    await fetch(`${server.url}/v1/uuid?count=3`);
    const [flakes, uuids] = [await issued('snowflake'), await issued('uuid')];
    expect(flakes).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < 20; i++) {
      expect(await head('/v1/snowflake?count=1000')).toEqual({
        status: 200,
        type: flake.headers.get('content-type'),
        length: null,
        body: '',
      });
      expect(await head('/api/snowflake/get/orders')).toMatchObject({ status: 200, type: 'text/plain; charset=utf-8' });
      expect((await head('/v1/uuid?count=1000')).status).toBe(200);
      expect((await head('/v1/uuid?version=4&format=ulid')).status).toBe(400);
    }
    expect((await head('/v1/snowflake?layout=nope')).status).toBe(400);
    expect([await issued('snowflake'), await issued('uuid')]).toEqual([flakes, uuids]);
  });
});
