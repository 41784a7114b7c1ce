/**
 * The client world: the production SequoiaClient (its buffers, reserve and
 * fallback space) in simulated client processes, talking to the simulated
 * cluster's servers through an in-sim fetch. The client's clock, timers and
 * randomness are the simulator's (the client's ports), so the run stays a
 * function of the seed.
 *
 * The in-sim fetch stands for the HTTP front (src/server): it serves the two
 * routes the client uses, `GET /v1/segment/{tag}` (IdService.next/nextMany)
 * and `POST /v1/fallback/{tag}/lease` (the production FallbackLeases over a
 * MemoryWorkerLeaseStore on the store's clock), with the error bodies and
 * statuses of the real front. Fastify itself is not simulated.
 *
 * Checks, on top of the cluster's (every server answer to a client goes
 * through the cluster's checker too): every ID a client hands its caller was
 * answered by a server to that very client, or is a fallback ID; no client
 * hands out an ID of a tag twice, and no two clients hand out the same ID
 * within one lineage of the tag (a store rollback is the only excuse, as for
 * servers); fallback IDs are unique per tag, with no excuse at all.
 */
import { SequoiaClient } from '../../src/client/client.js';
import { SequoiaError } from '../../src/core/errors.js';
import { idToBigInt, type Id } from '../../src/core/id.js';
import type { Random } from '../../src/core/random.js';
import { FALLBACK_FLOOR } from '../../src/core/fallback/fallback-space.js';
import { MemoryWorkerLeaseStore } from '../../src/adapters/memory/memory-worker-lease-store.js';
import { FallbackLeases } from '../../src/service/fallback-leases.js';
import { ERROR_STATUS } from '../../src/server/error-status.js';
import { HostClock } from '../engine/clock.js';
import type { Prng } from '../engine/prng.js';
import { Proc, type Scheduler } from '../engine/scheduler.js';
import { REFUSALS } from './checker.js';
import type { Cluster } from './cluster.js';

/** The client world's fault kinds, for the coverage report. */
export const CLIENT_ACTIONS = ['client-crash', 'client-pause', 'client-partition', 'client-clock-step', 'client-fallback-ids'] as const;
type ClientAction = (typeof CLIENT_ACTIONS)[number];

/** Tags the clients use; `a` has a fallback space. */
const CLIENT_TAGS = ['a', 'b'] as const;
const FALLBACK_TAGS = ['a'];
const LEASE_TTL_MS = 10_000;
/** What a caller of the client may be refused (the servers' refusals pass through the client). */
const CLIENT_REFUSALS = new Set([...REFUSALS, 'RESERVE_EXHAUSTED', 'LEASE_LOST']);

interface SimClient {
  readonly name: string;
  proc: Proc;
  client: SequoiaClient;
  readonly clock: HostClock;
  generation: number;
  partitioned: boolean;
  lastOk: number;
}

interface Handed {
  readonly client: string;
  readonly lineage: number;
  /** An answer the client has handed its caller already. */
  used?: boolean;
}

export function randomOf(rng: Prng): Random {
  return {
    fill(bytes: Uint8Array): void {
      for (let i = 0; i < bytes.length; i++) bytes[i] = rng.u32() & 0xff;
    },
  };
}

export class ClientWorld {
  private readonly clients: SimClient[] = [];
  private readonly leaseStore: MemoryWorkerLeaseStore;
  private readonly leases = new Map<string, FallbackLeases>();
  /** Per tag and ID: what servers answered to which client process, in which lineage. */
  private readonly issued = new Map<string, Map<bigint, Handed[]>>();
  /** Per tag and ID: what clients handed their callers. */
  private readonly handed = new Map<string, Map<bigint, Handed[]>>();
  private readonly gapMs: number;
  handedOut = 0;

  constructor(
    private readonly sched: Scheduler,
    private readonly rng: Prng,
    private readonly cluster: Cluster,
  ) {
    const storeClock = new HostClock(sched, 0);
    this.leaseStore = new MemoryWorkerLeaseStore(() => storeClock.now());
    this.gapMs = rng.pick([30, 60, 120]);
    cluster.coverage.expect(CLIENT_ACTIONS);
    const n = rng.int(2, 4);
    for (let i = 0; i < n; i++) {
      const clock = new HostClock(sched, rng.int(0, 1e6));
      const c: SimClient = {
        name: `c${i}`,
        proc: new Proc(`c${i}#0`),
        client: undefined as never,
        clock,
        generation: 0,
        partitioned: false,
        lastOk: -1,
      };
      this.clients.push(c);
      this.boot(c);
    }
  }

  private count(a: ClientAction): void {
    this.cluster.coverage.count(a);
  }

  private boot(c: SimClient): void {
    c.proc = new Proc(`${c.name}#${++c.generation}`);
    const urls = this.rng.chance(0.5)
      ? this.cluster.servers.map((s) => `http://${s.name}.sim`)
      : [`http://${this.rng.pick(this.cluster.servers).name}.sim`];
    c.client = new SequoiaClient({
      urls,
      name: c.proc.name,
      batch: { initial: 10, min: 5, max: 50 },
      reserve: { seconds: 5, min: 20, max: 100, probeMs: 500 },
      fallback: true,
      timeoutMs: 3000,
      retry: { attempts: 3, baseDelayMs: 50, maxDelayMs: 1000 },
      clock: c.clock,
      timers: this.sched.timersFor(c.proc),
      random: randomOf(this.rng.fork()),
      fetch: this.fetchFor(c, c.proc),
    });
    this.sched.log(`client-up ${c.proc.name} ${urls.join(',')}`);
  }

  /** Starts the callers' traffic: each client is asked for IDs every few ms until `until`. */
  start(until: number): void {
    for (const c of this.clients) {
      const tick = (): void => {
        this.call(c);
        if (this.sched.now < until) this.sched.after(this.rng.float() * 2 * this.gapMs, undefined, tick);
      };
      this.sched.after(this.rng.int(0, 50), undefined, tick);
    }
  }

  /** One caller's call, in the client's process (held while it is paused, dropped once it crashed). */
  private call(c: SimClient): void {
    const tag = this.rng.pick(CLIENT_TAGS);
    const n = this.rng.chance(0.15) ? this.rng.int(2, 10) : 1;
    const proc = c.proc;
    const client = c.client;
    this.sched.after(0, proc, () => {
      const p = n === 1 ? client.next(tag).then((v) => [v]) : client.nextBatch(tag, n);
      p.then(
        (ids) => {
          if (proc.alive) this.got(c, proc, tag, ids);
        },
        (e: unknown) => {
          if (!proc.alive) return;
          const code = e instanceof SequoiaError ? e.code : 'NOT_A_SEQUOIA_ERROR';
          if (!CLIENT_REFUSALS.has(code))
            this.cluster.checker.fail('unexpected-error', `client ${proc.name} ${tag}: ${code}: ${String(e)}`);
        },
      );
    });
  }

  /** IDs the client handed its caller: judged against what servers answered it and what every client handed out. */
  private got(c: SimClient, proc: Proc, tag: string, ids: readonly bigint[]): void {
    // The process that was asked: a call made before a crash resolves in the old process, not in its successor.
    const who = proc.name;
    let byTag = this.handed.get(tag);
    if (!byTag) this.handed.set(tag, (byTag = new Map()));
    const fallback = ids.filter((id) => id >= FALLBACK_FLOOR).length;
    if (fallback > 0) this.count('client-fallback-ids');
    this.sched.log(`client-ans ${who} ${tag} ${ids[0]}+${ids.length}${fallback > 0 ? ' fallback' : ''}`);
    for (const id of ids) {
      this.handedOut++;
      let lineage = -2; // fallback IDs: one lineage for ever
      if (id < FALLBACK_FLOOR) {
        // The oldest answer to this client not handed out yet: a client may hand an ID out as often as servers answered it.
        const answers =
          this.issued
            .get(tag)
            ?.get(id)
            ?.filter((h) => h.client === who) ?? [];
        const from = answers.find((h) => !h.used);
        if (!from) {
          const why = answers.length > 0 ? `more often than servers answered it (${answers.length})` : 'which no server answered it';
          this.cluster.checker.fail(answers.length > 0 ? 'duplicate' : 'client-invented', `${who} handed out ${tag} ${id} ${why}`);
          continue;
        }
        from.used = true;
        lineage = from.lineage;
      } else if (!FALLBACK_TAGS.includes(tag))
        this.cluster.checker.fail('client-invented', `${who} handed out fallback ID ${id} of ${tag}`);
      const prev = byTag.get(id);
      // A re-creation below the tag's history (an operator's mistake) is a new lineage: clients keep no marks to see it.
      const clash = prev?.find((p) => p.lineage === lineage && (p.client !== who || lineage === -2));
      if (clash)
        this.cluster.checker.fail(
          'duplicate',
          `${tag} ${id} handed out twice by clients: by ${clash.client} (lineage ${clash.lineage}), again by ${who}`,
        );
      if (prev) prev.push({ client: who, lineage });
      else byTag.set(id, [{ client: who, lineage }]);
    }
    c.lastOk = this.sched.now;
  }

  /** The client's fetch: each request crosses the simulated network to a worker of the server its URL names. */
  private fetchFor(c: SimClient, proc: Proc): typeof fetch {
    return ((input: string | URL, init?: RequestInit) =>
      new Promise<Response>((resolve, reject) => {
        const url = new URL(String(input));
        const signal = init?.signal ?? undefined;
        let done = false;
        const onAbort = (): void => finish(() => reject(signal?.reason));
        const finish = (f: () => void): void => {
          if (done) return;
          done = true;
          signal?.removeEventListener('abort', onAbort);
          f();
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        if (c.partitioned) return; // lost on the way: the transport's timeout ends it
        this.sched.after(this.latency(), undefined, () => {
          const server = this.cluster.servers.find((s) => `${s.name}.sim` === url.host);
          const ws = server?.workers.filter((w) => w.state === 'up' || w.state === 'closing') ?? [];
          const reply = (status: number, body: string, headers: Record<string, string> = {}): void => {
            this.sched.after(this.latency(), proc, () => finish(() => resolve(response(status, body, headers))));
          };
          if (!server || ws.length === 0) {
            this.sched.after(this.latency(), proc, () =>
              finish(() => reject(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }))),
            );
            return;
          }
          const w = this.rng.pick(ws);
          // Handled in the worker's process: held while it is paused, lost if it crashes first.
          this.sched.after(0, w.proc, () => this.serve(proc, server, w, url, init?.body, reply));
        });
      })) as typeof fetch;
  }

  private latency(): number {
    return this.rng.chance(0.05) ? this.rng.int(5, 80) : 0.3 + this.rng.float() * 3;
  }

  private serve(
    c: Proc,
    s: Cluster['servers'][number],
    w: Cluster['servers'][number]['workers'][number],
    url: URL,
    body: unknown,
    reply: (status: number, body: string, headers?: Record<string, string>) => void,
  ): void {
    const fail = (e: unknown): void => {
      if (!w.proc.alive) return;
      const code = e instanceof SequoiaError ? e.code : 'INTERNAL';
      if (!CLIENT_REFUSALS.has(code) && code !== 'NOT_FOUND')
        this.cluster.checker.fail('unexpected-error', `${w.proc.name} answered client ${c.name}: ${code}: ${String(e)}`);
      const retry =
        e instanceof SequoiaError && e.retryAfterMs !== undefined ? { 'retry-after': String(Math.ceil(e.retryAfterMs / 1000)) } : undefined;
      reply(ERROR_STATUS[code as keyof typeof ERROR_STATUS] ?? 500, JSON.stringify({ error: { code, message: String(e) } }), retry);
    };
    const lease = /^\/v1\/fallback\/([^/]+)\/lease$/.exec(url.pathname);
    if (lease) {
      const tag = decodeURIComponent(lease[1] as string);
      if (this.cluster.store.faults.unavailable) return fail(new SequoiaError('STORE_UNAVAILABLE', 'sim store: unreachable'));
      this.leasesOf(w.proc.name)
        .lease(tag, JSON.parse(String(body ?? '{}')) as object, c.name.replace(/#.*/, ''))
        .then((l) => reply(200, JSON.stringify(l)), fail);
      return;
    }
    const seg = /^\/v1\/segment\/([^/]+)$/.exec(url.pathname);
    const service = w.service;
    if (!seg || !service) return fail(new SequoiaError('SHUTTING_DOWN', 'no service'));
    const tag = decodeURIComponent(seg[1] as string);
    const count = Number(url.searchParams.get('count') ?? '1');
    const proc = w.proc;
    const settle = (got: Id | Id[]): void => {
      if (!proc.alive) return;
      const ids = (Array.isArray(got) ? got : [got]).map(idToBigInt);
      this.answered(s, proc, c, tag, ids);
      reply(200, JSON.stringify({ ids: ids.map(String) }));
    };
    try {
      const r = count === 1 ? service.next(tag) : service.nextMany(tag, count);
      if (r instanceof Promise) (r as Promise<Id | Id[]>).then(settle, fail);
      else settle(r);
    } catch (e) {
      fail(e);
    }
  }

  /** A server's answer to a client: checked as every server answer is, and remembered for the client's hand-outs. */
  private answered(s: Cluster['servers'][number], proc: Proc, c: Proc, tag: string, ids: readonly bigint[]): void {
    const checker = this.cluster.checker;
    this.sched.log(`ans ${proc.name} ${tag} ${ids[0]}+${ids.length} to ${c.name}`);
    checker.answer(proc.name, `${s.name}@${s.dir.lost}`, tag, ids, s.dir.durable.get(tag)?.mark);
    let byTag = this.issued.get(tag);
    if (!byTag) this.issued.set(tag, (byTag = new Map()));
    for (const id of ids) {
      const h = { client: c.name, lineage: checker.lineageOf(proc.name, tag, id) };
      const prev = byTag.get(id);
      if (prev) prev.push(h);
      else byTag.set(id, [h]);
    }
  }

  private leasesOf(procName: string): FallbackLeases {
    let l = this.leases.get(procName);
    if (!l) {
      l = new FallbackLeases({
        tags: FALLBACK_TAGS,
        ttlMs: LEASE_TTL_MS,
        leases: () => this.leaseStore,
        random: randomOf(this.rng.fork()),
      });
      this.leases.set(procName, l);
    }
    return l;
  }

  /** One client fault drawn from the seed. */
  chaos(): void {
    const r = this.rng;
    const c = r.pick(this.clients);
    const kind = r.pick(['client-crash', 'client-pause', 'client-partition', 'client-partition', 'client-clock-step'] as const);
    switch (kind) {
      case 'client-crash': {
        if (!c.proc.alive) return; // down already, its restart on the way
        this.count(kind);
        this.sched.log(`FAULT client-crash ${c.proc.name}`);
        c.proc.alive = false;
        this.sched.after(r.int(100, 3000), undefined, () => this.boot(c));
        return;
      }
      case 'client-pause': {
        if (c.proc.paused) return;
        this.count(kind);
        const proc = c.proc;
        proc.paused = true;
        this.sched.log(`FAULT client-pause ${proc.name}`);
        this.sched.after(r.int(500, 15_000), undefined, () => {
          this.sched.log(`resume ${proc.name}`);
          this.sched.resume(proc);
        });
        return;
      }
      case 'client-partition': {
        if (c.partitioned) return;
        this.count(kind);
        c.partitioned = true;
        const ms = r.int(1000, 15_000);
        this.sched.log(`FAULT client-partition ${c.proc.name} ${ms}ms`);
        this.sched.after(ms, undefined, () => {
          c.partitioned = false;
        });
        return;
      }
      case 'client-clock-step': {
        this.count(kind);
        const ms = (r.chance(0.5) ? -1 : 1) * (r.chance(0.2) ? 86_400_000 : r.int(500, 60_000));
        c.clock.step(ms);
        this.sched.log(`FAULT client-clock-step ${c.proc.name} ${ms}ms`);
        return;
      }
    }
  }

  heal(): void {
    for (const c of this.clients) {
      c.partitioned = false;
      if (c.proc.paused) this.sched.resume(c.proc);
    }
  }

  /** Liveness: every client handed out IDs since `since` (late in the heal), and from its servers (not its reserve). */
  checkLiveness(since: number): void {
    for (const c of this.clients) {
      const states = Object.values(c.client.stats().tags).map((t) => t.state);
      if (c.lastOk < since || states.some((s) => s !== 'serving'))
        this.cluster.checker.fail(
          'liveness',
          `client ${c.proc.name} not served after the heal (last ID at ${c.lastOk} ms, tags ${states.join(',')})`,
        );
    }
  }
}

function response(status: number, body: string, headers: Record<string, string>): Response {
  const h = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return {
    status,
    headers: { get: (k: string) => h.get(k.toLowerCase()) ?? null },
    text: () => Promise.resolve(body),
  } as unknown as Response;
}
