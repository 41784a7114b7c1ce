/**
 * The server's local state directory: one SQLite file, `<stateDir>/state.db`,
 * shared by every process of the server (the workers of `--workers N`, the
 * CLI's `fence`). It holds
 * - the high-water mark of each tag (the rollback guard), and
 * - the highest snowflake tick each worker id may have issued (reserved ahead),
 * so both promises hold for the server as a whole, not per process,
 * - and the store it belongs to (`meta` key `store`, see `bindStore`).
 *
 * Every change is one `BEGIN IMMEDIATE` transaction (a read-modify-write that
 * other processes cannot interleave) committed with `synchronous = FULL`: when
 * a write resolves, it survives SIGKILL and power loss, so the IDs it covers
 * may be handed out. Tags are keys in a table, not file names, so every legal
 * tag fits. Marks written by earlier versions (one JSON file per tag under
 * `hwm/` and `workers/<i>/hwm/`) are taken over once, keeping the highest.
 *
 * Its methods block (a busy timeout, an fsync): a server runs it in a worker
 * thread (`adapters/kit/off-loop/off-loop.ts`), so its methods answer promises and one
 * change runs at a time (a `change` callback may be asynchronous: across
 * threads it runs on the caller's, between BEGIN and COMMIT).
 *
 * A small disk (issue 28): the write-ahead log is checkpointed and truncated
 * every few pages (`openSqlite`), and a reserve file (`reserve`, 64 KiB) is
 * kept beside it. When a write finds the disk full, the reserve is given up
 * so the log can be checkpointed and a restart can open the file; writes then
 * refuse (STORE_UNAVAILABLE) until the reserve can be written again, i.e.
 * until space returns, and nothing needs deleting by hand.
 *
 * A FILE REPLACED UNDER A RUNNING SERVER (issue 40 item 9). The handle keeps
 * the file it opened, even after another was renamed onto `state.db` (a
 * restore of the dir) or it was removed: marks written on would go to a file
 * in no directory, lost at the next start, which would then judge the store
 * by the older marks at the path. So every operation first compares the file
 * at the path (device and inode) with the one open, and refuses
 * (STORE_UNAVAILABLE) when they differ; unlike the SQLite store
 * (sqlite-connection.ts), it does not take the new file up: the marks that
 * cover the IDs this server handed out are in the one it has open.
 */
import { type Clock, systemClock } from '../../core/clock.js';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { InvalidArgumentError, SequoiaError, UnavailableError, located } from '../../core/errors.js';
import { checkShared, type AcceptedRange, type GuardVerdict, type HighWaterMark } from '../../core/segment/rollback-guard.js';
import type { HighWaterMarkStore } from '../../ports/high-water-mark-store.js';
import { DiskReserve, RESERVE_BYTES } from '../kit/files/disk-reserve.js';
import { isDiskFull, openSqlite } from '../kit/connection/sqlite-open.js';

interface MarkRow {
  mark: string;
  tripped_at_epoch: bigint | null;
  /** Absent from state dirs of earlier versions until this one opens them (the column is added then). */
  tripped_generation: string | null;
  /** JSON [[start, end], …] as decimal strings; null in rows of earlier versions (everything below the mark). */
  ranges: string | null;
}

const MARK_COLUMNS = 'mark, tripped_at_epoch, tripped_generation, ranges';

export class StateDir implements HighWaterMarkStore {
  readonly path: string;
  /** Named in refusals (a CLI's marks are the CLI's state dir, not a server's). */
  readonly where: string;
  private readonly dir: string;
  /** Room kept free for the state dir's own use on a disk that fills up. */
  private readonly reserve: DiskReserve;
  private readonly db: Database.Database;
  private readonly getMark: Database.Statement<[string], MarkRow>;
  private readonly putMark: Database.Statement<[string, string, number | bigint | null, string | null, string | null]>;
  private readonly getTick: Database.Statement<[string, number], { tick: bigint }>;
  private readonly getHighestTick: Database.Statement<[string], { tick: bigint | null }>;
  private readonly putTick: Database.Statement<[string, number, number]>;
  /** One transaction at a time on the handle (a `change` may await). */
  private queue: Promise<unknown> = Promise.resolve();
  /** The file the handle has open (device and inode), checked against the path before every operation. */
  private readonly file: { readonly dev: number; readonly ino: number };

  /** The wall clock of the legacy marks' take-over date. */
  private readonly clock: Clock;

  constructor(stateDir: string, options: { busyTimeoutMs?: number; clock?: Clock } = {}) {
    this.dir = stateDir;
    this.clock = options.clock ?? systemClock;
    this.path = join(stateDir, 'state.db');
    // Refused with the system's code: the caller's stateError makes it STORE_UNAVAILABLE naming the write.
    this.reserve = new DiskReserve(join(stateDir, 'reserve'), (code) =>
      Object.assign(new Error(`the disk of ${stateDir} is full (no room for its ${RESERVE_BYTES / 1024} KiB reserve)`), { code }),
    );
    this.where = `state dir ${stateDir}`;
    try {
      mkdirSync(stateDir, { recursive: true });
      const open = () =>
        openSqlite(this.path, options.busyTimeoutMs ?? 5000, (db) => {
          db.defaultSafeIntegers(true);
          db.transaction(() => {
            db.exec(
              `CREATE TABLE IF NOT EXISTS marks (tag TEXT PRIMARY KEY NOT NULL, mark TEXT NOT NULL, tripped_at_epoch INTEGER, tripped_generation TEXT, ranges TEXT)`,
            );
            // A dir of an earlier version gains the columns (its trips have no generation, its marks no ranges: judged as
            // before); that version still reads the dir, as it selects its columns by name.
            const columns = db.prepare('SELECT name FROM pragma_table_info(?)').all('marks') as Array<{ name: string }>;
            if (!columns.some((c) => c.name === 'tripped_generation')) db.exec('ALTER TABLE marks ADD COLUMN tripped_generation TEXT');
            if (!columns.some((c) => c.name === 'ranges')) db.exec('ALTER TABLE marks ADD COLUMN ranges TEXT');
            db.exec(
              `CREATE TABLE IF NOT EXISTS ticks (space TEXT NOT NULL, worker_id INTEGER NOT NULL, tick INTEGER NOT NULL, PRIMARY KEY (space, worker_id))`,
            );
            db.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)`);
          }).immediate();
        });
      const openOnce = (): Database.Database => {
        try {
          return open();
        } catch (e) {
          // A full disk: the reserve makes room for the log's index and a checkpoint.
          if (!isDiskFull(e) || !this.reserve.giveUp()) throw e;
          return open();
        }
      };
      let db: Database.Database;
      let file: { dev: number; ino: number } | undefined;
      // The same file before and after opening is the file SQLite opened (none before: it created it); a rename in between opens again.
      for (;;) {
        const before = statSync(this.path, { throwIfNoEntry: false });
        db = openOnce();
        const after = statSync(this.path, { throwIfNoEntry: false });
        if (after !== undefined && (before === undefined || (before.dev === after.dev && before.ino === after.ino))) {
          file = { dev: after.dev, ino: after.ino };
          break;
        }
        db.close();
      }
      this.file = file;
      this.db = db;
      // On a full disk the server still starts; its writes refuse until space returns.
      this.reserve.tryKeep();
      this.getMark = db.prepare(`SELECT ${MARK_COLUMNS} FROM marks WHERE tag = ?`);
      this.putMark = db.prepare(
        `INSERT INTO marks (tag, ${MARK_COLUMNS}) VALUES (?, ?, ?, ?, ?) ON CONFLICT (tag) DO UPDATE SET ` +
          'mark = excluded.mark, tripped_at_epoch = excluded.tripped_at_epoch, tripped_generation = excluded.tripped_generation, ranges = excluded.ranges',
      );
      this.getTick = db.prepare('SELECT tick FROM ticks WHERE space = ? AND worker_id = ?');
      this.getHighestTick = db.prepare('SELECT MAX(tick) AS tick FROM ticks WHERE space = ?');
      this.putTick = db.prepare(
        'INSERT INTO ticks (space, worker_id, tick) VALUES (?, ?, ?) ON CONFLICT (space, worker_id) DO UPDATE SET tick = excluded.tick',
      );
      this.takeOverLegacyMarks(stateDir);
    } catch (e) {
      throw stateError((w) => `cannot open the state directory${w ? ` ${w}` : ''}`, e, stateDir);
    }
  }

  async get(tag: string): Promise<HighWaterMark | undefined> {
    return this.serial(() => {
      try {
        return toMark(this.getMark.get(tag));
      } catch (e) {
        throw stateError('cannot read the high-water mark', e);
      }
    });
  }

  async put(tag: string, record: HighWaterMark): Promise<void> {
    await this.update(tag, () => record);
  }

  update(
    tag: string,
    change: (current: HighWaterMark | undefined) => HighWaterMark | undefined | Promise<HighWaterMark | undefined>,
  ): Promise<HighWaterMark | undefined> {
    return this.serial(async () => {
      try {
        return await this.write(async () => {
          const current = toMark(this.getMark.get(tag));
          const next = await change(current);
          if (next === undefined || sameMark(next, current)) return current;
          const row = markRow(next);
          this.putMark.run(tag, row.mark, row.tripped_at_epoch, row.tripped_generation, row.ranges);
          return toMark(row);
        });
      } catch (e) {
        throw stateError((w) => `cannot record the high-water mark of tag ${JSON.stringify(tag)}${w ? ` in ${w}` : ''}`, e, this.path);
      }
    });
  }

  /**
   * The rollback guard's check and record of an answered range in one
   * transaction of this thread: in a server's worker thread, nothing crosses
   * to the event loop's thread while the write lock is held.
   */
  async admitRange(
    tag: string,
    floor: HighWaterMark | undefined,
    start: bigint,
    end: bigint,
    fenceEpoch: number,
    generation?: string,
    parts?: readonly AcceptedRange[],
  ): Promise<GuardVerdict> {
    let verdict: GuardVerdict | undefined;
    await this.update(
      tag,
      (current) => (verdict = checkShared(floor, current, start, end, fenceEpoch, this.where, generation, parts)).record,
    );
    if (verdict === undefined) throw stateError('cannot record the high-water mark', new Error('the mark was not read'));
    return verdict;
  }

  /** The highest tick recorded for a worker id of an id space, or undefined. */
  async lastTick(space: string, workerId: number): Promise<number | undefined> {
    return this.serial(() => {
      try {
        const r = this.getTick.get(space, workerId);
        return r === undefined ? undefined : Number(r.tick);
      } catch (e) {
        throw stateError('cannot read the last snowflake tick', e);
      }
    });
  }

  /** The highest tick recorded for any worker id of an id space (a lineage's start check), or undefined. */
  async highestTick(space: string): Promise<number | undefined> {
    return this.serial(() => {
      try {
        const r = this.getHighestTick.get(space);
        return r === undefined || r.tick === null ? undefined : Number(r.tick);
      } catch (e) {
        throw stateError('cannot read the last snowflake tick', e);
      }
    });
  }

  /**
   * Records `tick` for a worker id: raised only (`exact` false), or set as
   * given (`exact` true: a clean release lowers a reservation to the last
   * tick actually issued).
   */
  async recordTick(space: string, workerId: number, tick: number, exact = false): Promise<void> {
    return this.serial(async () => {
      try {
        await this.write(() => {
          const r = this.getTick.get(space, workerId);
          if (!exact && r !== undefined && Number(r.tick) >= tick) return;
          this.putTick.run(space, workerId, tick);
        });
      } catch (e) {
        throw stateError((w) => `cannot record the snowflake tick${w ? ` in ${w}` : ''}`, e, this.path);
      }
    });
  }

  /**
   * The store this state dir belongs to (its identity, `app/stores.ts`), or
   * undefined before a server bound it.
   */
  async boundStore(): Promise<string | undefined> {
    return this.serial(() => {
      const r = this.db.prepare('SELECT value FROM meta WHERE key = ?').get('store') as { value: string } | undefined;
      return r?.value;
    });
  }

  /**
   * Binds the state dir to a store on first use (a server's start), and
   * refuses another store: its marks and ticks describe that store's tags and
   * worker ids only, and read against another store's counters they would be
   * taken for a rollback. `bind` false only checks (the CLI).
   */
  async bindStore(identity: string, bind: boolean): Promise<void> {
    const bound = await this.boundStore();
    if (bound === undefined && bind) {
      await this.serial(() =>
        this.write(() => {
          this.db.prepare('INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)').run('store', identity);
        }),
      ).catch((e: unknown) => {
        throw stateError((w) => `cannot bind the state directory${w ? ` ${w}` : ''} to its store`, e, this.dir);
      });
      return this.bindStore(identity, false);
    }
    if (bound !== undefined && bound !== identity) {
      throw new InvalidArgumentError(
        `this state dir (${this.dir}) belongs to store ${bound}, not to ${identity}: its marks and ticks describe that store. ` +
          'Give each server its own --state-dir (if the same store only moved to a new address, see docs/operations.md, "One state dir, one server")',
      );
    }
  }

  /** Every mark, by key (a tag, or a tag's residue class: `tag#stride:offset`). */
  async allMarks(): Promise<Map<string, HighWaterMark>> {
    return this.serial(() => {
      const rows = this.db.prepare(`SELECT tag, ${MARK_COLUMNS} FROM marks`).all() as Array<MarkRow & { tag: string }>;
      return new Map(rows.map((r) => [r.tag, toMark(r) as HighWaterMark]));
    });
  }

  /**
   * `sequoia migrate --state-dir`: the dir moves from store `from` to store
   * `to` with its marks, which the caller has checked are at or below `to`'s
   * tags. A trip recorded against `from` (its fence epoch) means nothing to
   * `to`'s epochs: it is cleared, the mark kept. Refuses a dir bound to a
   * third store.
   */
  async rebindStore(from: string, to: string): Promise<'rebound' | 'bound'> {
    const bound = await this.boundStore();
    if (bound !== undefined && bound !== from && bound !== to) {
      throw new InvalidArgumentError(
        `this state dir (${this.dir}) belongs to store ${bound}, neither --from (${from}) nor --store (${to})`,
      );
    }
    if (bound === to) return 'bound';
    await this.serial(() =>
      this.write(() => {
        this.db.prepare('UPDATE marks SET tripped_at_epoch = NULL, tripped_generation = NULL').run();
        this.db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run('store', to);
      }),
    ).catch((e: unknown) => {
      throw stateError(`cannot bind the state directory ${this.dir} to its new store`, e);
    });
    return 'rebound';
  }

  async close(): Promise<void> {
    await this.queue.catch(() => {});
    this.db.close();
  }

  private serial<T>(fn: () => T | Promise<T>): Promise<T> {
    const checked = () => {
      this.assertSameFile();
      return fn();
    };
    const run = this.queue.then(checked, checked);
    this.queue = run.catch(() => {});
    return run;
  }

  /** Refuses when `state.db` at the path is no longer the file this handle has open (see the file comment). */
  private assertSameFile(): void {
    let now: { dev: number; ino: number } | undefined;
    try {
      now = statSync(this.path, { throwIfNoEntry: false });
    } catch (e) {
      throw stateError((w) => `cannot look at ${w ?? "the state directory's file"}`, e, this.path);
    }
    if (now !== undefined && now.dev === this.file.dev && now.ino === this.file.ino) return;
    const { message, located: split } = located(
      (w) =>
        `the state dir's file${w ? ` ${w}` : ''} was ${now === undefined ? 'removed' : 'replaced by another file'} while this process had it open: ` +
        'the high-water marks and ticks of the IDs it handed out are in the file it opened, so it records and issues nothing more. ' +
        'Put that file back at the path (if it was moved), or restart the server to use the file there (docs/operations.md, "Restoring the state dir")',
      this.path,
    );
    throw new UnavailableError('STORE_UNAVAILABLE', message, { retryAfterMs: 1000, located: split });
  }

  /**
   * One write transaction. The reserve must be in place first: a disk too full
   * to hold it refuses here, before SQLite is asked. A write that finds the
   * disk full gives the reserve up and checkpoints, so the log shrinks and a
   * restart can open the file.
   */
  private async write<T>(body: () => T | Promise<T>): Promise<T> {
    this.reserve.keep();
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const out = await body();
      this.db.exec('COMMIT');
      return out;
    } catch (e) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      if (isDiskFull(e) && this.reserve.giveUp()) {
        try {
          this.db.pragma('wal_checkpoint(TRUNCATE)');
        } catch {
          // the disk is full: the next write tries again
        }
      }
      throw e;
    }
  }

  private takeOverLegacyMarks(stateDir: string): void {
    const done = this.db.prepare('SELECT value FROM meta WHERE key = ?').get('legacy-marks') as { value: string } | undefined;
    if (done) return;
    const dirs = [join(stateDir, 'hwm')];
    for (const w of listDir(join(stateDir, 'workers'))) dirs.push(join(stateDir, 'workers', w, 'hwm'));
    this.db
      .transaction(() => {
        for (const dir of dirs) {
          for (const f of listDir(dir)) {
            const m = /^([0-9a-f]+)\.json$/.exec(f);
            if (!m) continue;
            const tag = Buffer.from(m[1] as string, 'hex').toString('utf8');
            const rec = JSON.parse(readFileSync(join(dir, f), 'utf8')) as { mark: string; trippedAtEpoch?: number };
            const cur = toMark(this.getMark.get(tag));
            const mark = cur && cur.mark > BigInt(rec.mark) ? cur.mark : BigInt(rec.mark);
            const trips = [cur?.trippedAtEpoch, rec.trippedAtEpoch].filter((x): x is number => x !== undefined);
            this.putMark.run(
              tag,
              mark.toString(),
              trips.length ? Math.max(...trips) : null,
              null,
              mark === cur?.mark ? rangesText(cur.ranges) : null,
            );
          }
        }
        this.db
          .prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)')
          .run('legacy-marks', new Date(this.clock.now()).toISOString());
      })
      .immediate();
  }
}

/**
 * The marks read in the caller's thread, never waiting: a server's state dir
 * runs in a worker thread whose one handle serialises reads behind writes, so
 * a read would wait out the fsync of the mark being recorded (the previous
 * strict batch's) and the event loop's turn to hear the answer. This second,
 * read-only handle reads the last committed marks directly (WAL: readers do
 * not wait for the writer), with no busy timeout, so it never waits on a lock
 * (DESIGN.md invariant 6); when SQLite would have to wait, or anything else
 * fails, `get` answers undefined and the caller asks the worker. A mark being
 * recorded by this process is not seen yet, as one being recorded by another
 * process was not before: the guard also raises each floor to the ranges the
 * store answered this process (`StrictTagAllocator.aboveAnswered`).
 */
export class StateDirReader {
  private readonly db: Database.Database;
  private readonly getMark: Database.Statement<[string], MarkRow>;

  /** Opens the state dir a server's worker thread has opened (and created); throws when it cannot. */
  constructor(stateDir: string) {
    this.db = new Database(join(stateDir, 'state.db'), { readonly: true, fileMustExist: true, timeout: 0 });
    try {
      this.db.defaultSafeIntegers(true);
      this.getMark = this.db.prepare(`SELECT ${MARK_COLUMNS} FROM marks WHERE tag = ?`);
    } catch (e) {
      this.db.close();
      throw e;
    }
  }

  /** The store this state dir is bound to (undefined: none yet), as `StateDir.bindStore` wrote it. */
  boundStore(): string | undefined {
    return (this.db.prepare('SELECT value FROM meta WHERE key = ?').get('store') as { value: string } | undefined)?.value;
  }

  /** The committed mark of `tag` (`null`: none), or undefined when it cannot be read at once. */
  get(tag: string): HighWaterMark | null | undefined {
    try {
      return toMark(this.getMark.get(tag)) ?? null;
    } catch {
      return undefined;
    }
  }

  close(): void {
    this.db.close();
  }
}

function toMark(r: MarkRow | undefined): HighWaterMark | undefined {
  if (r === undefined) return undefined;
  const mark = BigInt(r.mark);
  const ranges = parseRanges(r.ranges);
  const withRanges = ranges === undefined ? { mark } : { mark, ranges };
  if (r.tripped_at_epoch === null) return { ...withRanges, trippedAtEpoch: undefined };
  const trip = { ...withRanges, trippedAtEpoch: Number(r.tripped_at_epoch) };
  return r.tripped_generation === null ? trip : { ...trip, trippedGeneration: r.tripped_generation };
}

/** The row of a record: a generation only with a trip. */
function markRow(m: HighWaterMark): MarkRow {
  const tripped = m.trippedAtEpoch !== undefined;
  return {
    mark: m.mark.toString(),
    tripped_at_epoch: tripped ? BigInt(m.trippedAtEpoch as number) : null,
    tripped_generation: tripped ? (m.trippedGeneration ?? null) : null,
    ranges: rangesText(m.ranges),
  };
}

function rangesText(ranges: readonly AcceptedRange[] | undefined): string | null {
  return ranges === undefined ? null : JSON.stringify(ranges.map(([a, b]) => [a.toString(), b.toString()]));
}

/** Unreadable ranges count as absent: everything below the mark, as a row of an earlier version. */
function parseRanges(text: string | null): AcceptedRange[] | undefined {
  if (text === null) return undefined;
  try {
    const list = JSON.parse(text) as unknown;
    if (!Array.isArray(list)) return undefined;
    return list.map((p) => {
      if (!Array.isArray(p) || p.length !== 2) throw new Error('not a range');
      return [BigInt(p[0] as string), BigInt(p[1] as string)] as const;
    });
  } catch {
    return undefined;
  }
}

/** By value: a record that crossed threads is a copy. */
function sameMark(a: HighWaterMark, b: HighWaterMark | undefined): boolean {
  return (
    b !== undefined &&
    a.mark === b.mark &&
    a.trippedAtEpoch === b.trippedAtEpoch &&
    (a.trippedAtEpoch === undefined || a.trippedGeneration === b.trippedGeneration) &&
    rangesText(a.ranges) === rangesText(b.ranges)
  );
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The state directory failing is a 503: IDs are held back until their mark can be recorded. */
function stateError(what: string | ((where: string | undefined) => string), e: unknown, where?: string): SequoiaError {
  if (e instanceof SequoiaError) return e;
  const code = (e as { code?: string }).code ?? (e instanceof Error ? e.message : String(e));
  if (typeof what === 'string' || where === undefined) {
    const text = typeof what === 'string' ? what : what(undefined);
    return new UnavailableError('STORE_UNAVAILABLE', `${text} (${code})`, { cause: e, retryAfterMs: 1000 });
  }
  // The path is the operator's (the log, the CLI); a client reads what failed and the code.
  const { message, located: split } = located((w) => `${what(w)} (${code})`, where);
  return new UnavailableError('STORE_UNAVAILABLE', message, { cause: e, retryAfterMs: 1000, located: split });
}
