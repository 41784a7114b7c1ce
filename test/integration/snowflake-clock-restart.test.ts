/**
 * The last snowflake tick survives a crash whatever the provider and store:
 * `serve --worker-id-provider static:1` on Redis (its lease ran out with the crash)
 * issues for 3 s and is SIGKILLed; it restarts under libfaketime with the
 * clock stepped back to before the first run began. It must never hand out
 * an ID of the first run again: policy `wait` refuses (CLOCK_MOVED_BACKWARDS),
 * policy `logical` issues on ticks after the recorded one.
 */
import { type ChildProcess, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { probeRedis, REDIS_URL } from '../contract/backends.js';
import { BIN, launchServe, startServe, type ServerProcess } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

const children: ChildProcess[] = [];
/** faketime forks the server and waits for it: killing faketime alone would leave the server running. */
function killGroup(c: ChildProcess): void {
  try {
    if (c.pid !== undefined) process.kill(-c.pid, 'SIGKILL');
  } catch {
    c.kill('SIGKILL');
  }
}
afterAll(() => {
  for (const c of children) killGroup(c);
});

const faketimeMissing = spawnSync('faketime', ['-f', '+0s', 'true']).status !== 0;
const describeRedis = await describeWithService('Redis', probeRedis);
const describeFaketime = await describeWithService('faketime (Debian package faketime)', async () => {
  if (faketimeMissing) throw new Error('faketime is not installed');
});

/** `sequoia serve` under faketime (the clock `offsetSeconds` back), waiting for its URL; faketime forks the server, hence its own group. */
function serveBackInTime(args: string[], offsetSeconds: number): Promise<ServerProcess> {
  return launchServe('faketime', ['-f', `-${offsetSeconds}s`, process.execPath, BIN, 'serve', '--port', '0', ...args], { detached: true });
}

describeRedis('snowflake: the last tick is kept in the state directory (Redis store, static worker id)', () => {
  describeFaketime('under libfaketime', () => {
    it.each(['wait', 'logical'])(
      'clock policy %s: a restart with the clock 15 s back repeats nothing (wait: refuses; logical: issues after the recorded tick)',
      async (policy) => {
        const dir = mkdtempSync(join(tmpdir(), 'sequoia-tick-'));
        const prefix = `sequoia-tick-${Math.random().toString(36).slice(2, 8)}`;
        const store = `${REDIS_URL}?keyPrefix=${prefix}:tag:&tagsKey=${prefix}:tags&ledgerPrefix=${prefix}:ledger:&leasePrefix=${prefix}:lease:`;
        const args = [
          '--store',
          store,
          '--state-dir',
          join(dir, 'state'),
          '--worker-id-provider',
          'static:1',
          '--workers',
          '1',
          '--clock-policy',
          policy,
          '--log-level',
          'info',
        ];

        const first = await startServe(args);
        children.push(first.child);
        const startedAt = Date.now();
        const seen = new Set<string>();
        while (Date.now() - startedAt < 3000) {
          const r = await fetch(`${first.url}/v1/snowflake?count=1000`);
          expect(r.status).toBe(200);
          for (const id of ((await r.json()) as { ids: string[] }).ids) seen.add(id);
        }
        first.child.kill('SIGKILL');
        await first.exited;

        // Restart 15 s after the first run began, with the clock 15 s back: every tick it used comes round again.
        await new Promise((r) => setTimeout(r, Math.max(0, startedAt + 15_000 - 700 - Date.now())));
        const second = await serveBackInTime(args, 15);
        children.push(second.child);
        const repeats: string[] = [];
        const codes = new Set<string>();
        const t0 = Date.now();
        while (Date.now() - t0 < 3000) {
          const r = await fetch(`${second.url}/v1/snowflake?count=1000`);
          const body = (await r.json()) as { ids?: string[]; error?: { code: string } };
          if (r.status === 200) {
            for (const id of body.ids ?? []) if (seen.has(id)) repeats.push(id);
          } else codes.add(`${r.status} ${body.error?.code}`);
        }
        expect(repeats.slice(0, 5)).toEqual([]);
        expect(second.output()).toContain('snowflake clock is behind the last recorded tick');
        // logical borrows ticks after the recorded one (each reserved in the state directory before use)
        expect([...codes]).toEqual(policy === 'wait' ? ['503 CLOCK_MOVED_BACKWARDS'] : []);
        killGroup(second.child);
      },
      60_000,
    );
  });
});
