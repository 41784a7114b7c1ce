/**
 * `GET /v1/snowflake?count=10000` is all or nothing: exactly `count` IDs or
 * an error and none, also when the batch spans many ticks (twitter: 4,096 a
 * millisecond; sonyflake: 256 per 10 ms). A real `serve` process on SQLite.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

describe('snowflake batches (serve, SQLite lease)', () => {
  it.each(['twitter', 'sonyflake'])(
    '%s: count=10000 answers exactly 10,000 distinct IDs, every time',
    async (layout) => {
      const dir = mkdtempSync(join(tmpdir(), 'sequoia-sfbatch-'));
      const s = await startServe([
        '--store',
        `sqlite:${join(dir, 'ids.db')}`,
        '--state-dir',
        join(dir, 'state'),
        '--log-level',
        'info',
        '--workers',
        '1',
      ]);
      running.push(s);
      const all = new Set<string>();
      for (let i = 0; i < 4; i++) {
        const r = await fetch(`${s.url}/v1/snowflake?count=10000&layout=${layout}`);
        expect(r.status).toBe(200);
        const { ids } = (await r.json()) as { ids: string[] };
        expect(ids.length).toBe(10_000);
        for (const id of ids) all.add(id);
      }
      expect(all.size).toBe(40_000);
      s.child.kill('SIGTERM');
      await s.exited;
    },
    60_000,
  );
});
