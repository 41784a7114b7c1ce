/**
 * Clients that hammer servers and record every answer. Each client has its
 * own keep-alive agent: with `--workers N` a connection stays on one worker,
 * so a client with one socket skews its traffic to one worker.
 */
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Generator } from '../record.js';
import { Recorder } from '../record.js';
import { type Rng, sleep } from './rng.js';
import type { ServerProcess } from './server.js';

const now = (): number => performance.timeOrigin + performance.now();

export interface Op {
  readonly route: 'v1-segment' | 'leaf-segment' | 'v1-snowflake' | 'leaf-snowflake';
  /** Tag, or layout (snowflake). */
  readonly key: string;
  readonly count?: number;
}

const generatorOf = (op: Op): Generator => (op.route.endsWith('snowflake') ? 'snowflake' : 'segment');

function pathOf(op: Op): string {
  const n = op.count ?? 1;
  switch (op.route) {
    case 'v1-segment':
      return `/v1/segment/${encodeURIComponent(op.key)}?count=${n}`;
    case 'leaf-segment':
      return `/api/segment/get/${encodeURIComponent(op.key)}`;
    case 'v1-snowflake':
      return `/v1/snowflake?count=${n}&layout=${encodeURIComponent(op.key)}`;
    case 'leaf-snowflake':
      return '/api/snowflake/get/torture';
  }
}

interface Answer {
  readonly status?: number;
  readonly pid?: number;
  readonly body?: string;
  readonly error?: string;
}

function get(agent: Agent, url: string, path: string, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const req = request({ host: u.hostname, port: u.port, path, agent, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        const pid = Number(res.headers['sequoia-pid']);
        resolve({ status: res.statusCode, pid: Number.isInteger(pid) ? pid : undefined, body });
      });
      res.on('error', () => resolve({ error: 'NETWORK' }));
    });
    req.on('timeout', () => {
      req.destroy();
      resolve({ error: 'TIMEOUT' });
    });
    req.on('error', () => resolve({ error: 'NETWORK' }));
    req.end();
  });
}

/** Sends one request and records what came back. */
export async function call(
  rec: Recorder,
  agent: Agent,
  server: ServerProcess,
  op: Op,
  timeoutMs = 5000,
): Promise<readonly string[] | undefined> {
  const start = now();
  const a = await get(agent, server.url, pathOf(op), timeoutMs);
  const end = now();
  const base = {
    server: server.name,
    pid: a.pid,
    start,
    end,
    route: op.route,
    generator: generatorOf(op),
    key: op.key,
    asked: op.route.startsWith('leaf') ? 1 : (op.count ?? 1),
    status: a.status,
  };
  if (a.error !== undefined) {
    rec.record({ ...base, error: a.error });
    return undefined;
  }
  const body = a.body ?? '';
  if (a.status !== 200) {
    let code = /^([A-Z_]+)/.exec(body)?.[1];
    try {
      code = (JSON.parse(body) as { error?: { code?: string } }).error?.code ?? code;
    } catch {
      // a Leaf route: text/plain starting with the code
    }
    rec.record({ ...base, error: code ?? `HTTP_${a.status}`, body: code === undefined ? body.slice(0, 200) : undefined });
    return undefined;
  }
  let ids: string[];
  if (op.route.startsWith('leaf')) ids = [body.trim()];
  else {
    try {
      ids = (JSON.parse(body) as { ids: string[] }).ids;
    } catch {
      rec.record({ ...base, error: 'BAD_ANSWER' });
      return undefined;
    }
  }
  rec.record({ ...base, ids });
  return ids;
}

export interface LoadOptions {
  readonly dir: string;
  readonly name: string;
  readonly rng: Rng;
  /** Servers to choose from at each request (a function: the set changes as servers die). */
  readonly servers: () => readonly ServerProcess[];
  readonly ops: readonly Op[];
  readonly until: number;
  readonly maxRequests: number;
  /** Sockets of the client's agent (1: every request on one connection, hence one worker). */
  readonly sockets?: number;
  /** Pause between requests, ms. */
  readonly pauseMs?: number;
  readonly stop?: () => boolean;
}

/** One client's loop. Resolves with its recorder when time, count or `stop` ends it. */
export async function runClient(o: LoadOptions): Promise<Recorder> {
  const rec = new Recorder(o.dir, o.name);
  const agent = new Agent({ keepAlive: true, maxSockets: o.sockets ?? 1 });
  try {
    for (let i = 0; i < o.maxRequests && Date.now() < o.until && !(o.stop?.() ?? false); i++) {
      const servers = o.servers().filter((s) => s.url !== '');
      if (servers.length === 0) {
        await sleep(20);
        continue;
      }
      const s = o.rng.pick(servers);
      await call(rec, agent, s, o.rng.pick(o.ops));
      if (o.pauseMs) await sleep(o.pauseMs);
      // a down server answers at once: keep a refused loop from spinning
      const last = rec.records[rec.records.length - 1];
      if (last?.error === 'NETWORK') await sleep(10);
    }
  } finally {
    agent.destroy();
  }
  return rec;
}
