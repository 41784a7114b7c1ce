/**
 * A `sequoia serve` process of the built package, as users run it (node on
 * dist/cli/main.js, never npx: signals must reach it). Optionally under
 * libfaketime with a clock the scenario moves while the process runs, and
 * under its own hostname (k8s-ordinal reads it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { join } from 'node:path';
import { track, untrack } from './reaper.js';
import { sleep } from './rng.js';

/** TORTURE_FAKETIME_LIB replaces it only to prove that a clock fault which cannot take effect fails its scenario. */
const FAKETIME_LIB = process.env.TORTURE_FAKETIME_LIB ?? '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';

/** The smallest offset the Date header (one-second resolution, re-read once a second) can tell from none. */
const CONFIRMABLE_MS = 6000;

/** The environment without SEQUOIA_* settings of the caller. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SEQUOIA_')) env[k] = v;
  return env;
}

/**
 * A clock offset file for libfaketime. The process re-reads it at most once a
 * second (FAKETIME_CACHE_DURATION), so a jump lands within a second.
 */
export class FakeClock {
  readonly file: string;
  offsetMs = 0;
  /** Set to an offset other than 0 at least once. */
  moved = false;
  /**
   * Seen in effect: a process under this clock answered with a Date header
   * that far off. A scenario whose clock moved but was never confirmed fails:
   * without libfaketime no clock moves, and a clock scenario would pass
   * having tested nothing.
   */
  confirmed = false;

  constructor(dir: string, name: string) {
    this.file = join(dir, `${name}.faketime`);
    this.set(0);
  }

  set(offsetMs: number): void {
    this.offsetMs = offsetMs;
    if (offsetMs !== 0) this.moved = true;
    // libfaketime reads a relative offset in (fractional) seconds.
    writeFileSync(this.file, `${offsetMs >= 0 ? '+' : '-'}${(Math.abs(offsetMs) / 1000).toFixed(3)}\n`);
  }

  env(): NodeJS.ProcessEnv {
    if (!existsSync(FAKETIME_LIB)) throw new Error(`clock fault cannot take effect: ${FAKETIME_LIB} is missing (apt-get install faketime)`);
    return {
      LD_PRELOAD: FAKETIME_LIB,
      FAKETIME_TIMESTAMP_FILE: this.file,
      FAKETIME_CACHE_DURATION: '1',
      // libuv's timers run on the monotonic clock: leave it alone.
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    };
  }
}

export interface ServerOptions {
  readonly name: string;
  /** The package's dist directory (a planted variant's copy in the proof test). */
  readonly dist: string;
  /** serve arguments (store, state dir, workers…), without --port. */
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly clock?: FakeClock | undefined;
  /** A hostname for the process (k8s-ordinal): runs it in its own UTS namespace. */
  readonly hostname?: string | undefined;
}

export class ServerProcess {
  child: ChildProcess | undefined;
  url = '';
  port = 0;
  /** Worker pids of a cluster (from the primary's `listening` line); the process itself otherwise. */
  pids: number[] = [];
  private out = '';
  private exitedP: Promise<number | string> = Promise.resolve(0);
  /** Set while SIGSTOPped. */
  stopped = false;
  starts = 0;

  constructor(readonly o: ServerOptions) {}

  get name(): string {
    return this.o.name;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  output(): string {
    return this.out;
  }

  /** Starts (on the same port as before after the first start) and waits for `listening`. Throws with the output when it exits first. */
  async start(extraArgs: readonly string[] = []): Promise<void> {
    const node = [
      join(this.o.dist, 'cli', 'main.js'),
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      String(this.port),
      ...this.o.args,
      ...extraArgs,
    ];
    // SEQUOIA_ANSWER_PID: the `sequoia-pid` header the checker groups answers by (opt-in).
    const env = { ...cleanEnv(), SEQUOIA_LOG_LEVEL: 'info', SEQUOIA_ANSWER_PID: '1', ...this.o.env, ...this.o.clock?.env() };
    const [cmd, argv] =
      this.o.hostname === undefined
        ? [process.execPath, node]
        : ['unshare', ['--uts', 'sh', '-c', 'hostname "$0" && exec "$@"', this.o.hostname, process.execPath, ...node]];
    const child = spawn(cmd, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    track(child.pid, false);
    child.once('exit', () => untrack(child.pid));
    this.stopped = false;
    this.starts++;
    const mark = this.out.length;
    this.exitedP = new Promise((resolve) => child.on('exit', (code, sig) => resolve(code ?? sig ?? -1)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.name} did not start in 30 s:\n${this.out.slice(mark, mark + 4000)}`)),
        30_000,
      );
      const onData = (d: Buffer) => {
        this.out += d.toString();
        const tail = this.out.slice(mark);
        if (this.o.clock !== undefined && /cannot be preloaded/.test(tail)) {
          clearTimeout(timer);
          child.kill('SIGKILL');
          reject(
            new Error(
              `clock fault cannot take effect: ${this.name} ran without libfaketime: ${/^.*cannot be preloaded.*$/m.exec(tail)?.[0] ?? ''}`,
            ),
          );
          return;
        }
        const m = /^.*"msg":"listening".*$/m.exec(tail);
        if (m) {
          const line = JSON.parse(m[0]) as { url: string; pid: number; workerPids?: number[] };
          clearTimeout(timer);
          this.url = line.url;
          this.port = Number(new URL(line.url).port);
          this.pids = line.workerPids ?? [line.pid];
          resolve();
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      // 'close': after the output pipes are drained, so the message below holds the reason.
      child.on('close', (code, sig) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited (${code ?? sig}) before listening:\n${this.out.slice(mark, mark + 4000)}`));
      });
    });
  }

  /**
   * Confirms that this server's clock is off by its FakeClock's offset, from
   * the Date header of a /healthz answer; throws when it is not (the fault did
   * not take effect). Retries for a few seconds: the offset file is re-read
   * at most once a second.
   */
  async confirmClock(): Promise<void> {
    const clock = this.o.clock;
    if (clock === undefined) throw new Error(`${this.name} runs without a fake clock`);
    if (Math.abs(clock.offsetMs) < CONFIRMABLE_MS)
      throw new Error(`a clock offset of ${clock.offsetMs} ms is too small to confirm (at least ${CONFIRMABLE_MS} ms)`);
    let seen: number | undefined;
    for (let i = 0; i < 8; i++) {
      seen = await this.dateOffset();
      if (seen !== undefined && Math.abs(seen - clock.offsetMs) <= CONFIRMABLE_MS / 2) {
        clock.confirmed = true;
        return;
      }
      await sleep(500);
    }
    throw new Error(
      `clock fault did not take effect: ${this.name}'s clock was set ${clock.offsetMs} ms off, its Date header says ${seen === undefined ? 'nothing' : `${seen} ms`}`,
    );
  }

  private dateOffset(): Promise<number | undefined> {
    return new Promise((resolve) => {
      const req = get(`${this.url}/healthz`, { timeout: 2000 }, (res) => {
        res.resume();
        const date = Date.parse(res.headers.date ?? '');
        resolve(Number.isNaN(date) ? undefined : date - Date.now());
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(undefined));
    });
  }

  /** Sends a signal to the server (the cluster primary, or the only process). */
  signal(sig: NodeJS.Signals): void {
    if (!this.running || this.child?.pid === undefined) return;
    if (sig === 'SIGSTOP') this.stopped = true;
    if (sig === 'SIGCONT') this.stopped = false;
    // Under unshare the node process is the child's child (exec keeps the pid: sh execs node).
    process.kill(this.child.pid, sig);
  }

  /** The live workers of this server's cluster: children of its primary (read from /proc, never a stale pid). */
  workerPids(): number[] {
    const primary = this.child?.pid;
    if (primary === undefined || !this.running) return [];
    try {
      const kids = readFileSync(`/proc/${primary}/task/${primary}/children`, 'utf8').trim();
      return kids === '' ? [] : kids.split(/\s+/).map(Number);
    } catch {
      return [];
    }
  }

  /** Sends a signal to one live cluster worker, chosen by `pick` among workerPids(). Returns its pid. */
  signalWorker(pick: (pids: readonly number[]) => number | undefined, sig: NodeJS.Signals): number | undefined {
    const pid = pick(this.workerPids());
    if (pid === undefined) return undefined;
    try {
      process.kill(pid, sig);
    } catch {
      // exited in between: the primary replaces it
    }
    return pid;
  }

  /** Resolves with the exit code or signal, or 'running' after `ms`. */
  async waitExit(ms: number): Promise<number | string> {
    return Promise.race([this.exitedP, sleep(ms).then(() => 'running')]);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; also resumes a stopped process first. */
  async stop(graceMs = 5000): Promise<void> {
    if (!this.running) return;
    if (this.stopped) this.signal('SIGCONT');
    this.signal('SIGTERM');
    if ((await this.waitExit(graceMs)) === 'running') {
      this.signal('SIGKILL');
      await this.exitedP;
    }
  }

  async kill(): Promise<void> {
    if (!this.running) return;
    this.signal('SIGKILL');
    await this.exitedP;
  }
}
