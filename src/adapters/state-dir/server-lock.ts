/**
 * A state dir belongs to one server (DESIGN.md invariant 5): the process that
 * runs it (a one-process server, or the primary of `--workers N`, whose
 * workers it forks) holds an exclusive lock on `<stateDir>/server.lock` for its
 * life. The lock is SQLite's own file lock (POSIX advisory locks, taken with
 * `BEGIN EXCLUSIVE` and never committed), so the kernel drops it when the
 * process ends, however it ends: a SIGKILLed server leaves no stale lock.
 * Nothing is written to the lock file; `owner.json` beside it says who holds
 * it, for the message. Cluster workers and the CLI's `fence` and `gen segment`
 * do not take it: they work for the server that holds it (the state dir's
 * store binding, StateDir.bindStore, keeps other stores out).
 */
import { type Clock, systemClock } from '../../core/clock.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { UnavailableError, located } from '../../core/errors.js';

export interface ServerLock {
  release(): void;
}

export function lockServer(stateDir: string, store: string, clock: Clock = systemClock): ServerLock {
  const path = join(stateDir, 'server.lock');
  const ownerPath = join(stateDir, 'owner.json');
  // A predecessor that was just killed may hold the lock while the kernel tears its process down: wait up to 3 s (start-up only).
  const db = new Database(path, { timeout: 3000 });
  try {
    db.exec('BEGIN EXCLUSIVE');
  } catch (e) {
    db.close();
    if (!String((e as { code?: unknown }).code).startsWith('SQLITE_BUSY')) throw e;
    let owner = '';
    try {
      const o = JSON.parse(readFileSync(ownerPath, 'utf8')) as { pid?: number; store?: string; since?: string };
      owner = ` (pid ${o.pid}, store ${o.store}, since ${o.since})`;
    } catch {
      // no owner file: the message names the dir only
    }
    const { message, located: split } = located(
      (w) =>
        `the state dir${w ? ` ${w}` : ''} is in use by another server${w ? owner : ''}: a state dir belongs to one server (its workers share it); give this server its own --state-dir`,
      stateDir,
    );
    throw new UnavailableError('STORE_UNAVAILABLE', message, { located: split });
  }
  try {
    writeFileSync(ownerPath, `${JSON.stringify({ pid: process.pid, store, since: new Date(clock.now()).toISOString() })}\n`);
  } catch {
    // a full disk: the lock holds all the same
  }
  return {
    release: () => {
      if (db.open) db.close();
    },
  };
}
