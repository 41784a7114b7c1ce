/**
 * Custom layouts from the config file, end to end with the built CLI and a
 * real server on SQLite, on Discord's published layout and example (test/helpers/discord.ts).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { DISCORD, DISCORD_EXAMPLE } from '../helpers/discord.js';

const EXPECTED = DISCORD_EXAMPLE;

const dir = mkdtempSync(join(tmpdir(), 'sequoia-layouts-'));
function configFile(layouts: unknown, extra: Record<string, unknown> = {}): string {
  const p = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(p, JSON.stringify({ layouts, ...extra }));
  return p;
}
const good = configFile({ discord: DISCORD });

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

describe('custom layouts in the config file', () => {
  it('sequoia explain decodes with them', () => {
    const r = sequoia(['explain', '175928847299117063', '--layout', 'discord', '--config', good]);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual(EXPECTED);
    // also from SEQUOIA_CONFIG
    expect(JSON.parse(sequoia(['explain', '175928847299117063', '--layout', 'discord'], { SEQUOIA_CONFIG: good }).stdout)).toEqual(
      EXPECTED,
    );
    const unknown = sequoia(['explain', '175928847299117063', '--layout', 'discord']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown layout "discord"/);
  });

  it('sequoia plan --layout shows widths, lifetime and the sign-bit warning', () => {
    const r = sequoia(['plan', '--layout', 'discord', '--config', good, '--json']);
    expect(r.status).toBe(0);
    const p = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(p).toMatchObject({ layout: 'discord', epoch: '2015-01-01T00:00:00.000Z', timeBits: 42, workers: 1024, sequencePerTick: 4096 });
    expect((p.warnings as string[]).join()).toMatch(/sign bit/);
    const text = sequoia(['plan', '--layout', 'discord', '--config', good]).stdout;
    expect(text).toMatch(/increment bits\s+12/);
    expect(sequoia(['plan', '--layout', 'leaf']).stdout).toMatch(/sequence start random 0-99 each tick/);
    expect(sequoia(['plan', '--layout', 'uid-generator']).stdout).toMatch(/warning: its time bits ran out on 2024-11-20T13:24:16/);
    expect(sequoia(['plan']).status).toBe(2);
  });

  it('sequoia gen snowflake --layout discord issues IDs in that layout', () => {
    const before = Date.now();
    const r = sequoia(
      ['gen', 'snowflake', '--layout', 'discord', '--config', good, '--count', '3', '--store', `sqlite:${join(dir, 'gen.db')}`],
      {
        SEQUOIA_STATE_DIR: join(dir, 'gen-state'),
      },
    );
    expect(r.stderr).toBe('');
    const ids = r.stdout.trim().split('\n');
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) {
      const ms = Number(BigInt(id) >> 22n) + 1420070400000;
      expect(ms).toBeGreaterThanOrEqual(before - 5);
      expect(ms).toBeLessThanOrEqual(Date.now());
    }
  });

  it('are validated like presets: each problem names the field', () => {
    const cases: [unknown, RegExp][] = [
      [{ discord: { ...DISCORD, epochMs: Date.now() + 86_400_000 } }, /epochMs must be in the past/],
      [{ discord: { ...DISCORD, timeBits: 30 } }, /widths must sum to 63 \(got 52\)/],
      [{ twitter: DISCORD }, /a preset has this name/],
      [{ discord: { ...DISCORD, fields: [{ name: 'worker', bits: 10, role: 'node' }] } }, /exactly one field must have role sequence/],
      [{ discord: { ...DISCORD, epoch: 1 } }, /unknown field epoch/],
      [
        {
          old: {
            epochMs: Date.UTC(2000, 0, 1),
            timeBits: 28,
            unitMs: 1000,
            fields: [
              { name: 'worker', bits: 22, role: 'node' },
              { name: 'sequence', bits: 13, role: 'sequence' },
            ],
          },
        },
        /ran out on/,
      ],
    ];
    for (const [layouts, msg] of cases) {
      const r = sequoia(['explain', '1', '--layout', 'discord', '--config', configFile(layouts)]);
      expect(r.status, JSON.stringify(layouts)).toBe(2);
      expect(r.stderr).toMatch(/layouts \(from /);
      expect(r.stderr).toMatch(msg);
    }
    const r = sequoia(['serve', '--config', good, '--snowflake-layout', 'nope', '--workers', '1']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/snowflakeLayout: no layout "nope"; known: twitter, .*discord/);
  });

  it('serve issues, explains and lists them (/v1/snowflake?layout=discord, /v1/explain, /v1/status)', async () => {
    const s = await startServe([
      '--config',
      good,
      '--store',
      `sqlite:${join(dir, 'serve.db')}`,
      '--state-dir',
      join(dir, 'serve-state'),
      '--workers',
      '1',
    ]);
    running.push(s);
    const before = Date.now();
    const r = (await (await fetch(`${s.url}/v1/snowflake?layout=discord&count=5`)).json()) as { layout: string; ids: string[] };
    expect(r.layout).toBe('discord');
    expect(new Set(r.ids).size).toBe(5);
    for (const id of r.ids) {
      const e = (await (await fetch(`${s.url}/v1/explain/${id}?layout=discord`)).json()) as { timestampMs: number; kind: string };
      expect(e.kind).toBe('snowflake');
      expect(e.timestampMs).toBeGreaterThanOrEqual(before - 5);
      expect(e.timestampMs).toBe(Number(BigInt(id) >> 22n) + 1420070400000);
    }
    expect(await (await fetch(`${s.url}/v1/explain/175928847299117063?layout=discord`)).json()).toEqual(EXPECTED);
    const status = (await (await fetch(`${s.url}/v1/status`)).json()) as { layouts: { name: string; preset: boolean; epoch: string }[] };
    expect(status.layouts.find((l) => l.name === 'discord')).toMatchObject({ preset: false, epoch: '2015-01-01T00:00:00.000Z' });
    expect(status.layouts.find((l) => l.name === 'twitter')).toMatchObject({ preset: true });
    // its warnings are logged once at start, as plan prints them
    expect(s.output()).toMatch(/"layout":"discord","warning":"widths sum to 64[^"]*","msg":"custom snowflake layout"/);
    const bad = await fetch(`${s.url}/v1/snowflake?layout=nope`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/discord/);
  });
});
