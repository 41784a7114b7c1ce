/**
 * Issue 45: `sequoia serve` starts its storage threads (the state dir's, the
 * SQLite store's) as the bin sees `serve`, before the command table and the
 * server load, and the start hands them their work instead of booting new
 * ones. On built code: the worker threads exist only there.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import type { discardWarmThreads } from '../../src/adapters/kit/off-loop/warm.js';
import type { openStateDirOffLoop } from '../../src/app/off-loop.js';
import type { warmServeThreads } from '../../src/app/off-loop-entry.js';
import { ensureDist } from '../contract/ensure-dist.js';

interface WarmThread {
  readonly entry: string;
  readonly worker: Worker;
}

/** The process's pool (warm.ts keeps it under this symbol, shared by the bin's and the server's bundles). */
const pool = (): WarmThread[] => (globalThis as Record<symbol, WarmThread[] | undefined>)[Symbol.for('sequoia.offLoop.warmThreads')] ?? [];

interface Modules {
  readonly warm: { discardWarmThreads: typeof discardWarmThreads };
  readonly offLoop: { openStateDirOffLoop: typeof openStateDirOffLoop };
  readonly entry: { warmServeThreads: typeof warmServeThreads };
}

async function load(): Promise<Modules> {
  const dist = await ensureDist();
  const at = (p: string) => pathToFileURL(join(dist, p)).href;
  return {
    warm: (await import(at('adapters/kit/off-loop/warm.js'))) as Modules['warm'],
    offLoop: (await import(at('app/off-loop.js'))) as Modules['offLoop'],
    entry: (await import(at('app/off-loop-entry.js'))) as Modules['entry'],
  };
}

const exited = (w: Worker) => new Promise<number>((r) => w.once('exit', r));

describe('warm storage threads', () => {
  afterEach(async () => {
    const { warm } = await load();
    warm.discardWarmThreads();
  });

  it('how many serve starts, read off its flags: the state dir and SQLite; one for another store; none for a cluster or help', async () => {
    const { entry, warm } = await load();
    const count = (args: string[], env: NodeJS.ProcessEnv = {}) => {
      entry.warmServeThreads(args, env);
      const n = pool().length;
      warm.discardWarmThreads();
      return n;
    };
    expect(count(['serve'])).toBe(2);
    expect(count(['serve', '--store', 'sqlite:/tmp/x.db'])).toBe(2);
    expect(count(['serve', '--store=postgres://h/db'])).toBe(1);
    expect(count(['serve'], { SEQUOIA_STORE: 'redis://h' })).toBe(1);
    expect(count(['serve', '--store', 'redis://h'], { SEQUOIA_STORE: 'sqlite:x' })).toBe(1);
    expect(count(['serve', '--workers', '2'])).toBe(0);
    expect(count(['serve'], { SEQUOIA_WORKERS: 'auto' })).toBe(0);
    expect(count(['serve', '--workers', '1'])).toBe(2);
    expect(count(['serve', '--help'])).toBe(0);
  });

  it('a start takes a warm thread instead of booting one, and the thread serves the state dir', async () => {
    const { entry, offLoop } = await load();
    entry.warmServeThreads(['serve', '--store', 'memory:'], {});
    expect(pool()).toHaveLength(1);
    const state = await offLoop.openStateDirOffLoop(mkdtempSync(join(tmpdir(), 'sequoia-warm-')));
    try {
      expect(pool()).toHaveLength(0);
      await state.put('t', { mark: 7n });
      expect((await state.get('t'))?.mark).toBe(7n);
    } finally {
      await state.close();
    }
  });

  it('threads nobody claimed are ended, and a start without warm threads boots its own', async () => {
    const { entry, offLoop, warm } = await load();
    entry.warmServeThreads(['serve'], {});
    const threads = pool().map((t) => t.worker);
    expect(threads).toHaveLength(2);
    const ends = threads.map(exited);
    warm.discardWarmThreads();
    await Promise.all(ends);
    expect(pool()).toHaveLength(0);
    const state = await offLoop.openStateDirOffLoop(mkdtempSync(join(tmpdir(), 'sequoia-warm-')));
    try {
      await state.put('t', { mark: 9n });
      expect((await state.get('t'))?.mark).toBe(9n);
    } finally {
      await state.close();
    }
  });
});
