/** HTTP/1.1 keep-alive and pipelining: several requests written at once on one socket get their answers in order. */
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { MemorySegmentStore } from '../../src/adapters/memory/memory-segment-store.js';
import { MemoryHighWaterMarkStore } from '../../src/adapters/memory/memory-high-water-mark-store.js';
import { buildApp } from '../../src/server/build-app.js';
import { IdService } from '../../src/service/id-service.js';

let app: FastifyInstance | undefined;
afterAll(async () => {
  await app?.close();
});

describe('pipelining', () => {
  it('answers 20 pipelined requests on one connection, in order, with distinct increasing IDs', async () => {
    const service = new IdService({ store: new MemorySegmentStore(), marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0 });
    await service.start();
    await service.createTag({ tag: 'p', step: 7 });
    app = await buildApp({ service, metrics: false });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    const n = 20;
    const raw = await new Promise<string>((resolve, reject) => {
      const s = connect(port, '127.0.0.1');
      let out = '';
      s.on('data', (d) => {
        out += d.toString();
        if ((out.match(/HTTP\/1\.1 200/g) ?? []).length === n && /\r\n\r\n\d+$/.test(out)) {
          s.end();
          resolve(out);
        }
      });
      s.on('error', reject);
      setTimeout(() => reject(new Error(`timeout; got:\n${out}`)), 10_000);
      // all requests in one write: the server must not need to answer one before reading the next
      s.write(Array.from({ length: n }, () => 'GET /api/segment/get/p HTTP/1.1\r\nHost: x\r\n\r\n').join(''));
    });
    const ids = [...raw.matchAll(/\r\n\r\n(\d+)/g)].map((m) => Number(m[1]));
    expect(ids).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(raw).not.toMatch(/connection: close/i);
  });
});
