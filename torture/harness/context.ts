/**
 * What a scenario gets: its directory, its seeded randomness, the built
 * package to run, and helpers that register every process and proxy they
 * start so the runner can stop them all, whatever happened.
 */
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { FaultProxy } from '../../test/helpers/fault-proxy.js';
import type { CheckSpec, SnowflakeLayoutSpec } from '../checker.js';
import type { Recorder } from '../record.js';
import { type LoadOptions, runClient } from './load.js';
import type { Rng } from './rng.js';
import { cleanEnv, FakeClock, type ServerOptions, ServerProcess } from './server.js';
import type { PrivateStore } from './stores.js';

export const TWITTER: SnowflakeLayoutSpec = { epochMs: 1288834974657, unitMs: 1, timeBits: 41, nodeBits: 10, seqBits: 12 };

export interface Scenario {
  readonly name: string;
  /** What it does, one line (the report and docs/torture.md). */
  readonly about: string;
  /** `short` runs in CI; `long` is the release set (it includes every short scenario). */
  readonly short: boolean;
  run(ctx: Context): Promise<CheckSpec>;
}

export class Context {
  readonly servers: ServerProcess[] = [];
  readonly stores: PrivateStore[] = [];
  readonly proxies: FaultProxy[] = [];
  readonly notes: string[] = [];
  private readonly clocks: FakeClock[] = [];
  private readonly cleanups: Array<() => Promise<void> | void> = [];
  readonly logDir: string;
  /** A suffix for tag, table and key names that no other run shares. */
  readonly id: string;

  constructor(
    readonly dist: string,
    readonly dir: string,
    readonly rng: Rng,
    /** Long set: longer phases, more requests. */
    readonly long: boolean,
  ) {
    this.logDir = join(dir, 'log');
    // Private PostgreSQL runs as its own user and must reach its data directory in here.
    chmodSync(dir, 0o755);
    this.id = `${Date.now().toString(36)}${rng.int(0, 36 ** 4).toString(36)}`;
  }

  /** Phase length: `short` ms in the short set, `long` ms in the long one. */
  ms(short: number, long: number): number {
    return this.long ? long : short;
  }

  server(o: Omit<ServerOptions, 'dist'>): ServerProcess {
    const s = new ServerProcess({ ...o, dist: this.dist });
    this.servers.push(s);
    return s;
  }

  clock(name: string): FakeClock {
    const c = new FakeClock(this.dir, name);
    this.clocks.push(c);
    return c;
  }

  /** The faults a scenario set up that never showed: each fails the scenario. */
  faultsNotSeen(): string[] {
    return this.clocks.filter((c) => c.moved && !c.confirmed).map((c) => `the clock fault (${c.file}) was never seen in effect`);
  }

  store<T extends PrivateStore>(s: T): T {
    this.stores.push(s);
    return s;
  }

  async proxy(host: string, port: number): Promise<FaultProxy> {
    const p = await FaultProxy.start(host, port);
    this.proxies.push(p);
    return p;
  }

  /**
   * The built CLI, e.g. `tag create`, `fence`. Throws on a non-zero exit unless `allowFail`.
   * Asynchronous: the fault proxies live in this process and must keep forwarding meanwhile.
   */
  async sequoia(args: readonly string[], allowFail = false): Promise<{ status: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [join(this.dist, 'cli', 'main.js'), ...args], {
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const status = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    if (!allowFail && status !== 0) throw new Error(`sequoia ${args.join(' ')} exited ${status}: ${stderr}${stdout}`);
    return { status, stdout, stderr };
  }

  async createTag(store: string, tag: string, step: number): Promise<void> {
    await this.sequoia(['tag', 'create', tag, '--step', String(step), '--store', store]);
  }

  /** Runs `n` clients at once until `ms` have passed (or their request budget is spent). */
  async load(
    n: number,
    ms: number,
    o: Omit<LoadOptions, 'dir' | 'name' | 'rng' | 'until'> & { readonly prefix?: string },
  ): Promise<Recorder[]> {
    const until = Date.now() + ms;
    const prefix = o.prefix ?? 'client';
    let k = 0;
    while (existsSync(join(this.logDir, `${prefix}${k}.jsonl`))) k++;
    return Promise.all(
      Array.from({ length: n }, (_, i) => runClient({ ...o, dir: this.logDir, name: `${prefix}${k + i}`, rng: this.rng.fork(), until })),
    );
  }

  /** Copies a SQLite database with its WAL (the server that writes it is stopped). */
  copySqlite(from: string, to: string): void {
    for (const ext of ['', '-wal', '-shm']) {
      rmSync(to + ext, { force: true });
      if (existsSync(from + ext)) copyFileSync(from + ext, to + ext);
    }
  }

  /** Runs at the end of the scenario, after the servers stopped (e.g. dropping its tables on a shared store). */
  onCleanup(fn: () => Promise<void> | void): void {
    this.cleanups.push(fn);
  }

  async cleanup(): Promise<void> {
    // A cluster's workers leave with their primary (their IPC channel closes).
    await Promise.allSettled(this.servers.map((s) => s.stop(3000)));
    await Promise.allSettled(this.proxies.map((p) => p.close()));
    await Promise.allSettled(this.stores.map((s) => s.kill()));
    for (const fn of this.cleanups) {
      try {
        await fn();
      } catch (e) {
        this.notes.push(`cleanup: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }
}
