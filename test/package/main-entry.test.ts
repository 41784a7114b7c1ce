/**
 * `import 'sequoia-id'` as users write it (package self-reference through
 * package.json `exports`, on the built files): the snowflake API is there,
 * and a custom layout decodes the peer's published example (Discord's:
 * test/helpers/discord.ts).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, assertBuilt } from '../helpers/cli.js';
import { DISCORD, DISCORD_EXAMPLE } from '../helpers/discord.js';

function runModule(code: string): { status: number | null; stdout: string; stderr: string } {
  assertBuilt();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("import 'sequoia-id'", () => {
  it("exports defineLayout, getLayout, compose, decompose and explainId, and they decode Discord's example", () => {
    const r = runModule(`
      import * as s from 'sequoia-id';
      const discord = s.defineLayout({ name: 'discord', version: 1, unitMs: 1, ...${JSON.stringify(DISCORD)} });
      const d = s.decompose(discord, 175928847299117063n);
      console.log(JSON.stringify({
        fns: ['defineLayout', 'getLayout', 'compose', 'decompose', 'explainId', 'SnowflakeGenerator', 'plan'].map((n) => typeof s[n]),
        explain: s.explainId('175928847299117063', discord),
        values: d.values,
        back: s.compose(discord, d.tick, d.values).toString(),
        leaf: s.getLayout('leaf').name,
      }));
    `);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as {
      fns: string[];
      explain: Record<string, unknown>;
      values: Record<string, number>;
      back: string;
      leaf: string;
    };
    expect(out.fns).toEqual(Array(7).fill('function'));
    expect(out.explain).toEqual(DISCORD_EXAMPLE);
    expect(out.values).toEqual({ worker: 1, process: 0, increment: 7 });
    expect(out.back).toBe('175928847299117063');
    expect(out.leaf).toBe('leaf');
  });
});

describe("the README's library example, run twice as a new user would", () => {
  it('ensureTag makes the second run work, and close() lets the process end', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-lib-'));
    const script = `
      import { IdService, SqliteSegmentStore, FileHighWaterMarkStore } from 'sequoia-id/server';
      const service = new IdService({
        store: new SqliteSegmentStore({ path: ${JSON.stringify(join(dir, 'ids.db'))} }),
        marks: new FileHighWaterMarkStore(${JSON.stringify(dir)}),
      });
      await service.start();
      await service.ensureTag({ tag: 'order', step: 1000 });
      const id = await service.next('order');
      const created = await service.createTag({ tag: 'order' }, { ifExists: 'ok' });
      let code = '';
      try { await service.createTag({ tag: 'order' }); } catch (e) { code = e.code; }
      console.log(JSON.stringify({ id: String(id), step: created.step, code }));
      await service.close();
    `;
    // no process.exit: the run must end by itself once close() has stopped every timer and handle
    const first = runModule(script);
    expect(first.stderr).toBe('');
    expect(JSON.parse(first.stdout)).toEqual({ id: '1', step: 1000, code: 'TAG_EXISTS' });
    const second = runModule(script);
    expect(second.stderr).toBe('');
    expect(second.status).toBe(0);
    // close() gave the rest of the first run's range back: the second run continues at 2
    expect(JSON.parse(second.stdout)).toEqual({ id: '2', step: 1000, code: 'TAG_EXISTS' });
  });
});
