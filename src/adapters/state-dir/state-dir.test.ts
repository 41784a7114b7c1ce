import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StateDir } from './state-dir.js';

const hex = (tag: string) => Buffer.from(tag, 'utf8').toString('hex');

describe('StateDir (a real SQLite file)', () => {
  it('takes over the per-file marks of earlier versions once, keeping the highest and any trip', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-'));
    mkdirSync(join(dir, 'hwm'), { recursive: true });
    mkdirSync(join(dir, 'workers', '0', 'hwm'), { recursive: true });
    mkdirSync(join(dir, 'workers', '1', 'hwm'), { recursive: true });
    writeFileSync(join(dir, 'hwm', `${hex('order')}.json`), JSON.stringify({ mark: '100' }));
    writeFileSync(join(dir, 'workers', '0', 'hwm', `${hex('order')}.json`), JSON.stringify({ mark: '10100' }));
    writeFileSync(join(dir, 'workers', '1', 'hwm', `${hex('order')}.json`), JSON.stringify({ mark: '300', trippedAtEpoch: 2 }));
    writeFileSync(join(dir, 'workers', '1', 'hwm', `${hex('..')}.json`), JSON.stringify({ mark: '7' }));
    const s = new StateDir(dir);
    expect(s.get('order')).toEqual({ mark: 10100n, trippedAtEpoch: 2 });
    expect(s.get('..')).toEqual({ mark: 7n, trippedAtEpoch: undefined });
    s.put('order', { mark: 5n });
    s.close();
    // once: a second open does not take the old files over again
    expect(new StateDir(dir).get('order')).toEqual({ mark: 5n, trippedAtEpoch: undefined });
  });

  it('shares marks between handles (processes) and keys them by the tag, whatever its length', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-state-'));
    const a = new StateDir(dir);
    const b = new StateDir(dir);
    const tag = 'x'.repeat(128);
    a.update(tag, (cur) => ({ mark: (cur?.mark ?? 0n) + 100n }));
    b.update(tag, (cur) => ({ mark: (cur?.mark ?? 0n) + 100n }));
    expect(a.get(tag)?.mark).toBe(200n);
    expect(b.update(tag, (cur) => cur)).toEqual({ mark: 200n, trippedAtEpoch: undefined });
  });

  it('raises a tick, or sets it exactly on release', () => {
    const s = new StateDir(mkdtempSync(join(tmpdir(), 'sequoia-state-')));
    expect(s.lastTick('space', 1)).toBeUndefined();
    s.recordTick('space', 1, 500);
    s.recordTick('space', 1, 400);
    expect(s.lastTick('space', 1)).toBe(500);
    s.recordTick('space', 1, 450, true);
    expect(s.lastTick('space', 1)).toBe(450);
    expect(s.lastTick('space', 2)).toBeUndefined();
  });
});
