/**
 * The server's local state directory: one SQLite file, `<stateDir>/state.db`,
 * shared by every process of the server (the workers of `--workers N`, the
 * CLI's `fence`). It holds
 * - the high-water mark of each tag (the rollback guard), and
 * - the highest snowflake tick each worker id may have issued (reserved ahead),
 * so both promises hold for the server as a whole, not per process.
 *
 * Every change is one `BEGIN IMMEDIATE` transaction (a read-modify-write that
 * other processes cannot interleave) committed with `synchronous = FULL`: when
 * a write returns, it survives SIGKILL and power loss, so the IDs it covers may
 * be handed out. Tags are keys in a table, not file names, so every legal tag
 * fits. Marks written by earlier versions (one JSON file per tag under
 * `hwm/` and `workers/<i>/hwm/`) are taken over once, keeping the highest.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { UnavailableError } from '../../core/errors.js';
import type { HighWaterMark } from '../../core/segment/rollback-guard.js';
import type { HighWaterMarkStore } from '../../ports/high-water-mark-store.js';
import { openSqlite } from '../kit/sqlite-open.js';

interface MarkRow {
  mark: string;
  tripped_at_epoch: bigint | null;
}

export class StateDir implements HighWaterMarkStore {
  readonly path: string;
  /** Named in refusals (a CLI's marks are the CLI's state dir, not a server's). */
  readonly where: string;
  private readonly db: Database.Database;
  private readonly getMark: Database.Statement<[string], MarkRow>;
  private readonly putMark: Database.Statement<[string, string, number | null]>;
  private readonly getTick: Database.Statement<[string, number], { tick: bigint }>;
  private readonly putTick: Database.Statement<[string, number, number]>;

  constructor(stateDir: string, options: { busyTimeoutMs?: number } = {}) {
    this.path = join(stateDir, 'state.db');
    this.where = `state dir ${stateDir}`;
    try {
      mkdirSync(stateDir, { recursive: true });
      const db = openSqlite(this.path, options.busyTimeoutMs ?? 5000, (db) => {
        db.defaultSafeIntegers(true);
        db.transaction(() => {
          db.exec(`CREATE TABLE IF NOT EXISTS marks (tag TEXT PRIMARY KEY NOT NULL, mark TEXT NOT NULL, tripped_at_epoch INTEGER)`);
          db.exec(`CREATE TABLE IF NOT EXISTS ticks (space TEXT NOT NULL, worker_id INTEGER NOT NULL, tick INTEGER NOT NULL, PRIMARY KEY (space, worker_id))`);
          db.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)`);
        }).immediate();
      });
      this.db = db;
      this.getMark = db.prepare('SELECT mark, tripped_at_epoch FROM marks WHERE tag = ?');
      this.putMark = db.prepare('INSERT INTO marks (tag, mark, tripped_at_epoch) VALUES (?, ?, ?) ON CONFLICT (tag) DO UPDATE SET mark = excluded.mark, tripped_at_epoch = excluded.tripped_at_epoch');
      this.getTick = db.prepare('SELECT tick FROM ticks WHERE space = ? AND worker_id = ?');
      this.putTick = db.prepare('INSERT INTO ticks (space, worker_id, tick) VALUES (?, ?, ?) ON CONFLICT (space, worker_id) DO UPDATE SET tick = excluded.tick');
      this.takeOverLegacyMarks(stateDir);
    } catch (e) {
      throw stateError(`cannot open the state directory ${stateDir}`, e);
    }
  }

  get(tag: string): HighWaterMark | undefined {
    try {
      return toMark(this.getMark.get(tag));
    } catch (e) {
      throw stateError('cannot read the high-water mark', e);
    }
  }

  put(tag: string, record: HighWaterMark): void {
    this.update(tag, () => record);
  }

  update(tag: string, change: (current: HighWaterMark | undefined) => HighWaterMark | undefined): HighWaterMark | undefined {
    try {
      return this.db
        .transaction(() => {
          const current = toMark(this.getMark.get(tag));
          const next = change(current);
          if (next === undefined || next === current) return current;
          this.putMark.run(tag, next.mark.toString(), next.trippedAtEpoch ?? null);
          return next;
        })
        .immediate();
    } catch (e) {
      throw stateError(`cannot record the high-water mark of tag ${JSON.stringify(tag)} in ${this.path}`, e);
    }
  }

  /** The highest tick recorded for a worker id of an id space, or undefined. */
  lastTick(space: string, workerId: number): number | undefined {
    try {
      const r = this.getTick.get(space, workerId);
      return r === undefined ? undefined : Number(r.tick);
    } catch (e) {
      throw stateError('cannot read the last snowflake tick', e);
    }
  }

  /**
   * Records `tick` for a worker id: raised only (`exact` false), or set as
   * given (`exact` true: a clean release lowers a reservation to the last
   * tick actually issued).
   */
  recordTick(space: string, workerId: number, tick: number, exact = false): void {
    try {
      this.db
        .transaction(() => {
          const r = this.getTick.get(space, workerId);
          if (!exact && r !== undefined && Number(r.tick) >= tick) return;
          this.putTick.run(space, workerId, tick);
        })
        .immediate();
    } catch (e) {
      throw stateError(`cannot record the snowflake tick in ${this.path}`, e);
    }
  }

  close(): void {
    this.db.close();
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
            this.putMark.run(tag, mark.toString(), trips.length ? Math.max(...trips) : null);
          }
        }
        this.db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run('legacy-marks', new Date().toISOString());
      })
      .immediate();
  }
}

function toMark(r: MarkRow | undefined): HighWaterMark | undefined {
  if (r === undefined) return undefined;
  return { mark: BigInt(r.mark), trippedAtEpoch: r.tripped_at_epoch === null ? undefined : Number(r.tripped_at_epoch) };
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The state directory failing is a 503: IDs are held back until their mark can be recorded. */
function stateError(what: string, e: unknown): UnavailableError {
  const code = (e as { code?: string }).code ?? (e instanceof Error ? e.message : String(e));
  return new UnavailableError('STORE_UNAVAILABLE', `${what} (${code})`, { cause: e, retryAfterMs: 1000 });
}
