/**
 * A worker-id holder paused (SIGSTOP) past its lease or session while a new
 * server takes its id, then resumed beside it: the scenario the etcd and the
 * ZooKeeper providers' expiry tests share, with real `sequoia serve`
 * processes. The provider's own part (how expiry is awaited, how the new
 * holder comes up, what the resumed one may answer) is passed in.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { decompose, getLayout, joinWorker } from '../../src/core/snowflake/layout.js';
import type { ServerProcess } from './cli.js';
import { serveWithProvider } from './zookeeper.js';

export const twitter = getLayout('twitter');
export const worker = (id: string) => joinWorker(twitter, decompose(twitter, BigInt(id)).values);
export const tick = (id: string) => decompose(twitter, BigInt(id)).tick;

export interface Answer {
  readonly status: number;
  readonly ids: string[];
  readonly code: string | undefined;
}

export async function take(s: ServerProcess, count: number): Promise<Answer> {
  const r = await fetch(`${s.url}/v1/snowflake?count=${count}`, { signal: AbortSignal.timeout(20_000) });
  const body = (await r.json()) as { ids?: string[]; error?: { code: string } };
  return { status: r.status, ids: body.ids ?? [], code: body.error?.code };
}

/** Requests from `s` one after another until `untilMs` (Date.now()). */
async function load(s: ServerProcess, count: number, untilMs: number): Promise<Answer[]> {
  const out: Answer[] = [];
  while (Date.now() < untilMs) out.push(await take(s, count));
  return out;
}

/**
 * The servers and state dirs of one test file, killed and removed after all
 * its tests (a paused server is resumed first, so it can die).
 */
export function holders(dirPrefix: string): {
  readonly tmp: () => string;
  readonly serve: (provider: string, stateDir: string, args?: readonly string[]) => Promise<ServerProcess>;
} {
  const dirs: string[] = [];
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    for (const s of servers) {
      s.child.kill('SIGCONT');
      s.child.kill('SIGKILL');
    }
    await Promise.all(servers.map((s) => s.exited));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return {
    tmp: () => {
      const d = mkdtempSync(join(tmpdir(), dirPrefix));
      dirs.push(d);
      return d;
    },
    serve: async (provider, stateDir, args = []) => {
      const s = await serveWithProvider(provider, stateDir, ['--log-level', 'info', ...args]);
      servers.push(s);
      return s;
    },
  };
}

export interface PausedHolder {
  /** Starts a holder (A, then B) on a state dir of its own. */
  readonly serve: () => Promise<ServerProcess>;
  /** Resolves once A's claim has ended in the coordination service (A is paused meanwhile). */
  readonly awaitExpiry: () => Promise<void>;
  /** B's first 1000 IDs, once it holds A's id. */
  readonly firstOf: (b: ServerProcess) => Promise<Answer>;
}

/**
 * A issues, is paused until its claim ends, B starts and takes A's worker id
 * after every tick A issued, A is resumed and both are asked for IDs for
 * 4 s: no ID repeats, B answers every request. Resolves with what the
 * provider's test checks further.
 */
export async function pausedPastExpiry(o: PausedHolder): Promise<{
  readonly a: ServerProcess;
  readonly b: ServerProcess;
  readonly wa: ReturnType<typeof worker>;
  readonly before: readonly string[];
  readonly fromA: readonly Answer[];
}> {
  const a = await o.serve();
  const before: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await take(a, 1000);
    expect(r.status).toBe(200);
    before.push(...r.ids);
  }
  const wa = worker(before[0] as string);

  a.child.kill('SIGSTOP');
  await o.awaitExpiry();
  const b = await o.serve();
  const firstB = await o.firstOf(b);
  expect({ status: firstB.status, code: firstB.code }).toEqual({ status: 200, code: undefined });
  expect(worker(firstB.ids[0] as string)).toBe(wa);
  // B starts strictly after every tick A issued.
  expect(Math.min(...firstB.ids.map(tick))).toBeGreaterThan(Math.max(...before.map(tick)));

  a.child.kill('SIGCONT');
  const until = Date.now() + 4000;
  const [fromA, fromB] = await Promise.all([load(a, 1000, until), load(b, 1000, until)]);
  const all = [...before, ...firstB.ids, ...fromB.flatMap((r) => r.ids), ...fromA.flatMap((r) => r.ids)];
  expect(all.length - new Set(all).size).toBe(0);
  expect(fromB.every((r) => r.status === 200)).toBe(true);
  return { a, b, wa, before, fromA };
}
