/**
 * Issue 27: a server's state dir runs in a worker thread, one change at a
 * time. A strict batch reads its floor while the previous batch's mark is
 * being recorded; through the worker, that read waited for the mark's fsync.
 * Marks are now read in the caller's thread (`openStateDirOffLoop`, a
 * read-only handle that never waits). On built code: the worker thread exists
 * only there.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { StateDir } from '../../src/adapters/state-dir/state-dir.js';
import type { openStateDirOffLoop } from '../../src/app/off-loop.js';
import { ensureDist } from '../contract/ensure-dist.js';

type OffLoop = { openStateDirOffLoop: typeof openStateDirOffLoop };

const within = <T>(p: Promise<T>, ms: number): Promise<T | 'still waiting'> =>
  Promise.race([p, new Promise<'still waiting'>((r) => setTimeout(() => r('still waiting'), ms))]);

describe('the state dir of a server (worker thread): reading marks', () => {
  it('a read while a change holds the write lock answers at once, with the committed mark', async () => {
    const dist = await ensureDist();
    const { openStateDirOffLoop } = (await import(pathToFileURL(join(dist, 'app', 'off-loop.js')).href)) as OffLoop;
    const state = await openStateDirOffLoop(mkdtempSync(join(tmpdir(), 'sequoia-state-reads-')));
    let open = () => {};
    try {
      await state.put('t', { mark: 10n });
      let entered = false;
      const gate = new Promise<void>((r) => (open = r));
      // The worker runs the change between BEGIN IMMEDIATE and COMMIT, calling back to this thread: it holds the lock until the gate opens.
      const update = state.update as StateDir['update']; // the worker's change may await (the port's type says it need not)
      const writing = update('t', async () => {
        entered = true;
        await gate;
        return { mark: 20n };
      });
      for (let i = 0; i < 500 && !entered; i++) await new Promise((r) => setTimeout(r, 10));
      expect(entered).toBe(true);
      expect(await within(state.get('t'), 2000)).toEqual({ mark: 10n, trippedAtEpoch: undefined });
      open();
      expect(await writing).toEqual({ mark: 20n, trippedAtEpoch: undefined });
      expect(await state.get('t')).toEqual({ mark: 20n, trippedAtEpoch: undefined });
      expect(await state.get('other')).toBeUndefined();
    } finally {
      open();
      await state.close();
    }
  });
});
