/**
 * The cluster-wide order of a strict tag, with the store writes coalesced
 * (issue 27), on real processes: three servers (two `serve --workers 2`, one
 * single process) on one store, 40 concurrent HTTP clients recording when
 * each request was sent and when its answer came, single IDs and batches on
 * both routes; one whole server SIGKILLed and started again on its state
 * directory, and single cluster workers SIGKILLed, while the load runs.
 * Every ID answered before another request was sent must be smaller than
 * every ID of that request; no ID twice; every batch complete.
 */
import { mkdtempSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { POSTGRES_URL, probePostgres, uniqueName } from '../contract/backends.js';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

interface Answer {
  readonly sent: number;
  readonly got: number;
  readonly ids: readonly bigint[];
  readonly asked: number;
}

const running: ServerProcess[] = [];
afterAll(() => {
  for (const s of running) killServer(s);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function workerPids(s: ServerProcess): number[] {
  const line = s
    .output()
    .split('\n')
    .find((l) => l.includes('"msg":"listening'));
  return ((line && (JSON.parse(line) as { workerPids?: number[] }).workerPids) ?? []) as number[];
}

function killServer(s: ServerProcess): void {
  for (const pid of [s.child.pid, ...workerPids(s)]) {
    try {
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

function get(agent: Agent, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

/**
 * Linearizability of the answers: sorted by answer time, the largest ID
 * answered before a request was sent lies below that request's smallest ID.
 */
export function orderViolations(answers: readonly Answer[]): string[] {
  const byGot = [...answers].sort((a, b) => a.got - b.got);
  const prefixMax: bigint[] = [];
  let top = -1n;
  for (const a of byGot) {
    for (const id of a.ids) if (id > top) top = id;
    prefixMax.push(top);
  }
  const out: string[] = [];
  for (const b of answers) {
    // answers whose `got` is before b.sent: binary search for the last one
    let lo = 0;
    let hi = byGot.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((byGot[mid] as Answer).got < b.sent) lo = mid + 1;
      else hi = mid;
    }
    if (lo === 0) continue;
    const before = prefixMax[lo - 1] as bigint;
    const min = b.ids.reduce((m, x) => (x < m ? x : m), b.ids[0] as bigint);
    if (before >= min) out.push(`ID ${before} was answered before a request was sent that got ${min}`);
  }
  return out;
}

async function clusterRun(store: string, tag: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-strict-order-'));
  expect(sequoia(['tag', 'create', tag, '--step', '1', '--store', store]).status).toBe(0);
  const argsOf = (i: number, workers: number) => [
    '--workers',
    String(workers),
    '--store',
    store,
    '--state-dir',
    join(dir, `state${i}`),
    '--strict-tags',
    tag,
    '--log-level',
    'info',
  ];
  const shape = [2, 2, 1];
  const servers: Array<ServerProcess | undefined> = [];
  for (const [i, w] of shape.entries()) {
    const s = await startServe(argsOf(i, w));
    running.push(s);
    servers.push(s);
  }
  const answers: Answer[] = [];
  let errors = 0;
  const until = performance.now() + 8000;
  const routes = [
    (t: string) => `/api/segment/get/${t}`,
    (t: string) => `/v1/segment/${t}?count=1`,
    (t: string) => `/v1/segment/${t}?count=5`,
    (t: string) => `/v1/segment/${t}?count=17`,
  ];
  const client = async (c: number) => {
    const agents = shape.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
    let k = c;
    while (performance.now() < until) {
      k = (k * 1103515245 + 12345) % 2147483648;
      const i = k % shape.length;
      const s = servers[i];
      if (!s) {
        await sleep(5);
        continue;
      }
      const route = routes[(k >> 8) % routes.length] as (t: string) => string;
      const asked = route('x').endsWith('count=5') ? 5 : route('x').endsWith('count=17') ? 17 : 1;
      const sent = performance.now();
      try {
        const r = await get(agents[i] as Agent, `${s.url}${route(encodeURIComponent(tag))}`);
        const got = performance.now();
        if (r.status !== 200) {
          errors++;
          continue;
        }
        const ids = r.body.startsWith('{') ? (JSON.parse(r.body) as { ids: string[] }).ids.map(BigInt) : [BigInt(r.body)];
        answers.push({ sent, got, ids, asked });
      } catch {
        errors++; // the server was killed under the request: no answer, so no promise
        await sleep(5);
      }
    }
    for (const a of agents) a.destroy();
  };
  const faults = async () => {
    await sleep(2000);
    // a whole server dies and comes back on its state directory
    const victim = servers[1] as ServerProcess;
    servers[1] = undefined;
    killServer(victim);
    await victim.exited;
    await sleep(300);
    const again = await startServe(argsOf(1, shape[1] as number));
    running.push(again);
    servers[1] = again;
    await sleep(1500);
    // single cluster workers die (the primary forks new ones)
    for (const s of [servers[0], servers[1]]) {
      const pid = s && workerPids(s)[0];
      if (pid) process.kill(pid, 'SIGKILL');
      await sleep(700);
    }
  };
  await Promise.all([...Array.from({ length: 40 }, (_, c) => client(c + 1)), faults()]);
  for (const s of servers) if (s) killServer(s);

  expect(answers.length).toBeGreaterThan(500);
  const all = answers.flatMap((a) => a.ids);
  expect(new Set(all).size).toBe(all.length); // never twice
  for (const a of answers) {
    expect(a.ids.length).toBe(a.asked); // all or nothing
    for (let j = 1; j < a.ids.length; j++) expect(a.ids[j]).toBe((a.ids[j - 1] as bigint) + 1n); // one consecutive slice
  }
  expect(orderViolations(answers)).toEqual([]);
  console.log(
    `strict order on ${store.split(':')[0]}: ${answers.length} answers, ${all.length} IDs, ${errors} requests without an answer (kills)`,
  );
}

describe('strict tag order across servers and workers, coalesced (real processes)', () => {
  it('the checker catches a broken order', () => {
    const ok = [
      { sent: 0, got: 10, ids: [1n], asked: 1 },
      { sent: 5, got: 12, ids: [2n], asked: 1 },
      { sent: 11, got: 20, ids: [3n, 4n], asked: 2 },
    ];
    expect(orderViolations(ok)).toEqual([]);
    // concurrent answers may come in any order
    expect(
      orderViolations([
        { sent: 0, got: 10, ids: [2n], asked: 1 },
        { sent: 1, got: 9, ids: [1n], asked: 1 },
      ]),
    ).toEqual([]);
    // answered at 10, a later request (sent 11) got a smaller ID
    expect(
      orderViolations([
        { sent: 0, got: 10, ids: [5n], asked: 1 },
        { sent: 11, got: 15, ids: [3n, 4n], asked: 2 },
      ]),
    ).toHaveLength(1);
  });

  it('three servers (two --workers 2) on one SQLite file, 40 clients, kills', { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-strict-order-db-'));
    await clusterRun(`sqlite:${join(dir, 'ids.db')}`, 'order:strict');
  });
});

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('strict tag order on PostgreSQL (real processes)', () => {
  it('three servers (two --workers 2), 40 clients, kills', { timeout: 90_000 }, async () => {
    const table = uniqueName('sq_order');
    const u = new URL(POSTGRES_URL);
    u.searchParams.set('table', table);
    try {
      await clusterRun(u.toString(), 'order:strict');
    } finally {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      await c.query(`DROP TABLE IF EXISTS ${table}`);
      await c.query('DELETE FROM sequoia_schema WHERE component = $1', [table]).catch(() => {});
      await c.end();
    }
  });
});
