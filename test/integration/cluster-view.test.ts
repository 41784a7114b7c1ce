/**
 * Under `serve --workers 2`, /v1/status and /metrics describe the whole
 * server, whichever worker answers: figures gathered from every worker.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

let server: ServerProcess | undefined;
afterAll(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
});

describe('cluster-wide status and metrics', () => {
  it('merge every worker', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-cv-'));
    const store = `sqlite:${join(dir, 'ids.db')}`;
    expect(sequoia(['tag', 'create', 'order', '--step', '100', '--store', store], { SEQUOIA_STATE_DIR: join(dir, 'cli') }).status).toBe(0);
    server = await startServe(['--workers', '2', '--store', store, '--state-dir', join(dir, 'state'), '--log-level', 'info']);
    // new connections are spread over the workers: draw until both served the tag
    let drawn = 0;
    let perWorker = 0;
    for (let round = 0; round < 40 && perWorker < 2; round++) {
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          const r = await fetch(`${server!.url}/v1/segment/order?count=5`, { headers: { connection: 'close' } });
          expect(r.status).toBe(200);
          drawn += 5;
        }),
      );
      const st = (await (await fetch(`${server.url}/v1/status`)).json()) as {
        cluster?: { workers: number[] };
        tags: Array<{ tag: string; issued: number; perWorker?: unknown[] }>;
      };
      perWorker = st.tags.find((t) => t.tag === 'order')?.perWorker?.length ?? 0;
      if (perWorker === 2) {
        expect(st.cluster?.workers).toEqual([0, 1]);
        const order = st.tags.find((t) => t.tag === 'order')!;
        expect(order.issued).toBeLessThanOrEqual(drawn);
        expect(order.issued).toBeGreaterThan(0);
      }
    }
    expect(perWorker).toBe(2);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toMatch(
      /sequoia_segment_remaining\{[^}]*tag="order"[^}]*worker="0"|sequoia_segment_remaining\{[^}]*worker="0"[^}]*tag="order"/,
    );
    expect(text).toMatch(/worker="1"/);
  });
});
