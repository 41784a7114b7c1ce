/**
 * SIGHUP (the terminal or ssh session of a server closed) drains the server
 * as SIGTERM does: it exits 0 and gives its unused range back. Before, the
 * default action killed it at once, with no log line, drain or give-back.
 * Real processes, one and two workers.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
});

describe('SIGHUP', () => {
  for (const workers of ['1', '2']) {
    it(`--workers ${workers}: drains, gives the unused range back, exits 0`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'sequoia-hup-'));
      const store = `sqlite:${join(dir, 'ids.db')}`;
      expect(sequoia(['tag', 'create', 't', '--step', '1000', '--store', store]).status).toBe(0);
      const s = await startServe(['--store', store, '--state-dir', join(dir, 'state'), '--workers', workers]);
      running.push(s);
      const r = await fetch(`${s.url}/api/segment/get/t`, { headers: { connection: 'close' } });
      expect(await r.text()).toBe('1');
      s.child.kill('SIGHUP');
      expect(await s.exited).toBe(0);
      const list = JSON.parse(sequoia(['tag', 'list', '--json', '--store', store]).stdout) as { tag: string; maxId: string }[];
      // The worker that answered gave back all but the ID it handed out (the other worker, if any, loaded nothing or gave back too).
      expect(list.find((t) => t.tag === 't')?.maxId).toBe('2');
      expect(s.output()).toMatch(/"signal":"SIGHUP".*shutting down|shutting down.*"signal":"SIGHUP"/);
    }, 60_000);
  }
});
