import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { check, type SnowflakeLayoutSpec } from './checker.js';
import { readLog, Recorder, type RequestRecord } from './record.js';
import { summarize, toJson, toMarkdown } from './report.js';

let t = 0;
/** A successful segment answer; times advance by 10 ms per record unless given. */
function seg(ids: (number | string)[], o: Partial<RequestRecord> = {}): RequestRecord {
  t += 10;
  return {
    client: 'c',
    server: 'S',
    pid: 1,
    start: t,
    end: t + 1,
    route: 'v1-segment',
    generator: 'segment',
    key: 'order',
    asked: ids.length,
    ids: ids.map(String),
    ...o,
  };
}

const TWITTER: SnowflakeLayoutSpec = { epochMs: 1288834974657, unitMs: 1, timeBits: 41, nodeBits: 10, seqBits: 12 };
const flake = (ms: number, node: number, seq: number): string =>
  ((BigInt(ms - TWITTER.epochMs) << 22n) | (BigInt(node) << 12n) | BigInt(seq)).toString();

describe('check', () => {
  it('passes a clean log and counts what it checked', () => {
    const r = check([seg([1, 2, 3]), seg([4, 5]), seg([6], { route: 'leaf-segment' })]);
    expect(r.ok).toBe(true);
    expect(r.idsChecked).toBe(6);
    expect(r.counts).toEqual({ repeats: 0, shortBatches: 0, outside: 0, orderBroken: 0, unledgered: 0 });
    expect(r.availability).toBe(100);
    expect(r.gapRate).toBe(0);
  });

  it('reports a repeat with both holders, across servers and clients', () => {
    const r = check([seg([1, 2, 3], { client: 'a', server: 'S0', pid: 10 }), seg([3], { client: 'b', server: 'S1', pid: 20 })]);
    expect(r.ok).toBe(false);
    expect(r.counts.repeats).toBe(1);
    expect(r.repeats[0]).toMatchObject({
      key: 'segment:order',
      id: '3',
      first: { client: 'a', server: 'S0', pid: 10 },
      second: { client: 'b', server: 'S1', pid: 20 },
    });
  });

  it('keeps namespaces apart: the same number in two tags or in a tag and a layout is no repeat', () => {
    const r = check([seg([7]), seg([7], { key: 'pay' }), seg([7], { generator: 'snowflake', key: 'twitter', route: 'v1-snowflake' })]);
    expect(r.counts.repeats).toBe(0);
  });

  it('reports a batch shorter than asked', () => {
    const r = check([seg([1, 2], { asked: 5 })]);
    expect(r.counts.shortBatches).toBe(1);
    expect(r.shortBatches[0]?.detail).toBe('asked 5, got 2');
    expect(r.ok).toBe(false);
  });

  it('reports IDs below the tag start, above its end, and beyond 63 bits', () => {
    const r = check([seg([5, 1000]), seg(['9223372036854775808'], { key: 'big' })], { keys: { 'segment:order': { min: 10n, max: 999n } } });
    expect(r.outside.map((f) => f.id)).toEqual(['5', '1000', '9223372036854775808']);
  });

  it('reports a snowflake ID on a node the scenario does not run, or outside the run window', () => {
    const now = Date.UTC(2026, 0, 1);
    const ids = [flake(now, 3, 0), flake(now, 4, 0), flake(now - 10 * 86_400_000, 3, 1)];
    const r = check([seg(ids, { generator: 'snowflake', key: 'twitter', route: 'v1-snowflake' })], {
      keys: { 'snowflake:twitter': { layout: { ...TWITTER, nodes: [3] }, order: 'none' } },
      window: { from: now - 1000, to: now + 1000, slackMs: 3_600_000 },
    });
    expect(r.outside.map((f) => f.detail)).toEqual([
      expect.stringMatching(/^node 4 is none/),
      expect.stringMatching(/^time .* outside the run/),
    ]);
  });

  it('holds each process to increasing IDs: a later answer below an earlier one breaks the promise', () => {
    const r = check([seg([10, 11]), seg([5, 6])]);
    expect(r.counts.orderBroken).toBe(1);
    expect(r.orderBroken[0]?.detail).toMatch(/starting at 5 came after an answer that reached 11/);
  });

  it('does not order answers that overlapped in time, nor answers of different processes', () => {
    const overlapping = check([seg([10, 11], { start: 100, end: 200 }), seg([5, 6], { start: 150, end: 160 })]);
    expect(overlapping.counts.orderBroken).toBe(0);
    const twoProcesses = check([seg([10, 11], { pid: 1 }), seg([5, 6], { pid: 2 })]);
    expect(twoProcesses.counts.orderBroken).toBe(0);
  });

  it('holds global keys (strict tags) to increasing IDs across processes and servers', () => {
    const recs = [seg([10], { server: 'S0', pid: 1 }), seg([5], { server: 'S1', pid: 2 })];
    expect(check(recs, { keys: { 'segment:order': { order: 'global' } } }).counts.orderBroken).toBe(1);
    expect(check(recs, { keys: { 'segment:order': { order: 'none' } } }).counts.orderBroken).toBe(0);
  });

  it('reports IDs out of order within one answer, but not through a client buffer (no pid)', () => {
    expect(check([seg([3, 2])]).counts.orderBroken).toBe(1);
    expect(check([seg([3, 2], { pid: undefined, server: 'sdk' })]).counts.orderBroken).toBe(0);
  });

  it('counts errors by code into availability, and latency percentiles over every request', () => {
    const recs = [
      seg([1], { start: 0, end: 10 }),
      seg([2], { start: 20, end: 30 }),
      { ...seg([], { start: 40, end: 140 }), ids: undefined, error: 'STORE_UNAVAILABLE' },
      { ...seg([], { start: 200, end: 202 }), ids: undefined, error: 'NETWORK' },
    ];
    const r = check(recs);
    expect(r.errorsByCode).toEqual({ STORE_UNAVAILABLE: 1, NETWORK: 1 });
    expect(r.availability).toBe(50);
    expect(r.p50Ms).toBe(10);
    expect(r.p99Ms).toBe(100);
    expect(r.ok).toBe(true);
  });

  it('measures the gap rate of segment keys', () => {
    // 1..10 spans 10 IDs, 5 handed out.
    expect(check([seg([1, 2, 3]), seg([9, 10])]).gapRate).toBe(0.5);
  });

  it("fails on IDs the store's range ledger does not cover, naming who was given them", () => {
    const recs = [seg([1, 2, 3], { client: 'c1' }), seg([4, 5], { client: 'c2' })];
    const r = check(recs, { ledger: { 'segment:order': { checked: 5, uncovered: 3, examples: ['4', '5'] } } });
    expect(r.ok).toBe(false);
    expect(r.counts.unledgered).toBe(3);
    expect(r.unledgered.map((f) => [f.id, f.first?.client])).toEqual([
      ['4', 'c2'],
      ['5', 'c2'],
    ]);
    expect(check(recs, { ledger: { 'segment:order': { checked: 5, uncovered: 0, examples: [] } } }).ok).toBe(true);
  });

  it('keeps the first findings only but counts them all', () => {
    const recs = Array.from({ length: 30 }, () => seg([1], { pid: undefined }));
    const r = check(recs);
    expect(r.counts.repeats).toBe(29);
    expect(r.repeats).toHaveLength(20);
  });
});

describe('Recorder and report', () => {
  it('appends one JSON line per request per client, read back in full', () => {
    const dir = mkdtempSync(join(tmpdir(), 'torture-log-'));
    try {
      const a = new Recorder(dir, 'a');
      const b = new Recorder(dir, 'b');
      a.record({ server: 'S', pid: 1, start: 1, end: 2, route: 'v1-segment', generator: 'segment', key: 'x', asked: 1, ids: ['1'] });
      b.record({ server: 'S', start: 3, end: 4, route: 'v1-segment', generator: 'segment', key: 'x', asked: 1, error: 'NETWORK' });
      a.record({ server: 'S', pid: 1, start: 5, end: 6, route: 'v1-segment', generator: 'segment', key: 'x', asked: 1, ids: ['1'] });
      expect(readFileSync(join(dir, 'a.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
      const all = readLog(dir);
      expect(all.map((r) => r.client)).toEqual(['a', 'a', 'b']);
      expect(check(all).counts.repeats).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('renders a table row per scenario and the findings, in Markdown and JSON', () => {
    const bad = check([seg([1]), seg([1], { client: 'other' })]);
    const good = check([seg([2])]);
    const run = summarize('short', 7, 'abc123', [
      { name: 'one', seed: 1, seconds: 2, notes: ['a note'], result: good },
      { name: 'two', seed: 2, seconds: 3, notes: [], result: bad },
    ]);
    expect(run.ok).toBe(false);
    expect(run.repeats).toBe(1);
    const md = toMarkdown(run);
    expect(md).toMatch(/\| one \| pass \| 1 \| 0 \|/);
    expect(md).toMatch(/\| two \| \*\*FAIL\*\* \| 2 \| 1 \|/);
    expect(md).toContain('- a note');
    expect(md).toMatch(/`segment:order` 1: handed out twice; first c→S\/pid 1 .*; then other→S\/pid 1/);
    const json = JSON.parse(toJson(run)) as { scenarios: Array<{ result: { counts: { repeats: number } } }>; commit: string };
    expect(json.commit).toBe('abc123');
    expect(json.scenarios[1]?.result.counts.repeats).toBe(1);
  });
});
