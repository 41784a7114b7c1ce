/**
 * Stores for scenarios. The shared services (PostgreSQL 5432, MariaDB 3306,
 * Redis 6379) are only ever given a table or key prefix of the run's own;
 * a scenario that restarts, freezes or restores a store starts a PRIVATE
 * instance on its own port and data directory and stops it at the end.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdirSync } from 'node:fs';
import { etcdMemberArgs } from '../../test/helpers/etcd-member.js';
import { freePort } from '../../test/helpers/ports.js';
import { join } from 'node:path';
import { track, untrack } from './reaper.js';
import { sleep } from './rng.js';

export const SHARED = {
  postgres: (table: string) => `postgres://postgres@127.0.0.1:5432/test?table=${table}`,
  mysql: (table: string) => `mysql://root@127.0.0.1:3306/test?table=${table}`,
  redis: (prefix: string) => `redis://127.0.0.1:6379/?keyPrefix=${prefix}`,
};

/** Drops a scenario's own table from the shared PostgreSQL or MariaDB (never anything else). */
export function dropSharedTable(kind: 'postgres' | 'mysql', table: string): void {
  if (!/^torture_[a-z0-9]+$/.test(table)) throw new Error(`not a torture table: ${table}`);
  if (kind === 'postgres')
    execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', 'test', '-qc', `DROP TABLE IF EXISTS ${table}`], {
      stdio: 'ignore',
      timeout: 10_000,
    });
  else
    execFileSync('mariadb', ['-h', '127.0.0.1', '-uroot', 'test', '-e', `DROP TABLE IF EXISTS ${table}`], {
      stdio: 'ignore',
      timeout: 10_000,
    });
}

async function waitFor(what: string, probe: () => boolean, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (probe()) return;
    await sleep(200);
  }
  throw new Error(`${what} did not come up in ${ms / 1000} s`);
}

const quiet = (cmd: string, args: string[], opts: { uid?: number } = {}): boolean => {
  try {
    execFileSync(cmd, args, { stdio: 'ignore', timeout: 10_000, ...opts });
    return true;
  } catch {
    return false;
  }
};

/** A store process of our own: start, stop (SIGTERM), kill, freeze (SIGSTOP), thaw. */
export abstract class PrivateStore {
  protected child: ChildProcess | undefined;
  port = 0;
  log = '';

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  abstract readonly url: string;
  protected abstract spawnIt(): ChildProcess;
  protected abstract ready(): boolean;
  /** Once per data directory, before the first start. */
  protected async init(): Promise<void> {}

  private inited = false;

  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    if (!this.inited) {
      await this.init();
      this.inited = true;
    }
    const child = this.spawnIt();
    this.child = child;
    track(child.pid, true);
    child.once('exit', () => untrack(child.pid));
    child.stdout?.on('data', (d: Buffer) => (this.log += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (this.log += d.toString()));
    try {
      await waitFor(`${this.constructor.name} on port ${this.port}`, () => child.exitCode === null && this.ready());
    } catch (e) {
      throw new Error(`${e instanceof Error ? e.message : String(e)}; its log ends:\n${this.log.slice(-1500)}`, { cause: e });
    }
    await this.afterStart();
  }

  protected async afterStart(): Promise<void> {}

  /**
   * A signal to the store's whole process group (stores are started detached,
   * each in a group of its own): a crash must take PostgreSQL's backends down
   * with the postmaster, or the next start finds its shared memory in use.
   */
  private group(sig: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, sig);
    } catch {
      // the group is gone
    }
  }

  private async exit(sig: NodeJS.Signals, ms: number): Promise<void> {
    const c = this.child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    const done = new Promise<void>((r) => c.once('exit', () => r()));
    this.group('SIGCONT');
    if (sig === 'SIGKILL') this.group(sig);
    else c.kill(sig);
    await Promise.race([done, sleep(ms)]);
    if (c.exitCode === null && c.signalCode === null) {
      this.group('SIGKILL');
      await done;
    }
    // Backends of a killed postmaster leave on their own only later.
    this.group('SIGKILL');
  }

  /** The signal of a clean shutdown. */
  protected readonly stopSignal: NodeJS.Signals = 'SIGTERM';

  /** A clean shutdown (the store flushes). */
  stop(): Promise<void> {
    return this.exit(this.stopSignal, 15_000);
  }

  /** A crash. */
  kill(): Promise<void> {
    return this.exit('SIGKILL', 5000);
  }

  freeze(): void {
    this.group('SIGSTOP');
  }

  thaw(): void {
    this.group('SIGCONT');
  }

  async restart(crash = false): Promise<void> {
    await (crash ? this.kill() : this.stop());
    await this.start();
  }
}

export class PrivateRedis extends PrivateStore {
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  protected spawnIt(): ChildProcess {
    // appendfsync always: a restart (even a crash) keeps every acknowledged INCRBY.
    return spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--dir',
        this.dir,
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
  }

  protected ready(): boolean {
    return quiet('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), 'ping']);
  }
}

const PG_BIN = (() => {
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
  } catch {
    return '/usr/lib/postgresql/15/bin';
  }
})();

/** PostgreSQL runs as the `postgres` user (it refuses root); the data directory is that user's. */
export class PrivatePostgres extends PrivateStore {
  private readonly uid: number;
  // SIGTERM is PostgreSQL's "smart" shutdown, which waits for every client to leave; SIGINT is its clean "fast" one.
  protected override readonly stopSignal: NodeJS.Signals = 'SIGINT';

  constructor(dir: string) {
    super(dir);
    this.uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, this.uid, this.uid);
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  protected override async init(): Promise<void> {
    execFileSync(join(PG_BIN, 'initdb'), ['-D', join(this.dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync'], {
      stdio: 'ignore',
      uid: this.uid,
      cwd: '/tmp',
    });
  }

  protected spawnIt(): ChildProcess {
    return spawn(
      join(PG_BIN, 'postgres'),
      [
        '-D',
        join(this.dir, 'data'),
        '-p',
        String(this.port),
        '-k',
        this.dir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'max_connections=60',
        '-c',
        'shared_buffers=16MB',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], uid: this.uid, cwd: '/tmp', detached: true },
    );
  }

  protected ready(): boolean {
    return quiet('pg_isready', ['-h', '127.0.0.1', '-p', String(this.port), '-q']);
  }

  /** pg_dump of the database, custom format. */
  dump(file: string): void {
    execFileSync('pg_dump', ['-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres', '-Fc', '-f', file, 'postgres'], {
      stdio: 'ignore',
    });
  }

  /** Restores a pg_dump over the database (--clean drops what the dump holds first). */
  restore(file: string): void {
    execFileSync(
      'pg_restore',
      ['-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres', '--clean', '--if-exists', '-d', 'postgres', file],
      { stdio: 'ignore' },
    );
  }
}

export class PrivateMariadb extends PrivateStore {
  get url(): string {
    return `mysql://root@127.0.0.1:${this.port}/test`;
  }

  protected override async init(): Promise<void> {
    execFileSync(
      'mariadb-install-db',
      ['--no-defaults', `--datadir=${join(this.dir, 'data')}`, '--user=root', '--auth-root-authentication-method=normal', '--skip-test-db'],
      { stdio: 'ignore', timeout: 120_000 },
    );
  }

  protected spawnIt(): ChildProcess {
    return spawn(
      'mariadbd',
      [
        '--no-defaults',
        `--datadir=${join(this.dir, 'data')}`,
        `--port=${this.port}`,
        '--bind-address=127.0.0.1',
        `--socket=${join(this.dir, 'sock')}`,
        '--user=root',
        '--skip-log-bin',
        '--innodb-buffer-pool-size=32M',
        `--pid-file=${join(this.dir, 'pid')}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
  }

  protected ready(): boolean {
    return quiet('mariadb-admin', ['-h', '127.0.0.1', '-P', String(this.port), '-uroot', 'ping']);
  }

  protected override async afterStart(): Promise<void> {
    execFileSync('mariadb', ['-h', '127.0.0.1', '-P', String(this.port), '-uroot', '-e', 'CREATE DATABASE IF NOT EXISTS test'], {
      stdio: 'ignore',
    });
  }
}

/** etcd (Debian's etcd-server, as .ci/etcd.sh installs it): one member on its own client and peer ports. */
export class PrivateEtcd extends PrivateStore {
  private peerPort = 0;

  get url(): string {
    return `etcd://127.0.0.1:${this.port}`;
  }

  protected override async init(): Promise<void> {
    this.peerPort = await freePort();
  }

  protected spawnIt(): ChildProcess {
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const client = `http://127.0.0.1:${this.port}`;
    return spawn('etcd', etcdMemberArgs('torture', join(this.dir, 'data'), client, peer), {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
  }

  protected ready(): boolean {
    // etcd's /health over bash's /dev/tcp (etcdctl is another package).
    const get = `exec 3<>/dev/tcp/127.0.0.1/${this.port} && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && grep -q '"health":"true"' <&3`;
    return quiet('timeout', ['2', 'bash', '-c', get]);
  }
}
