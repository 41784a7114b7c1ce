/**
 * Another process holding a SQLite write lock (`BEGIN IMMEDIATE`) on a file,
 * as an operator's `sqlite3` shell or a backup script would: a real process,
 * so the server sees exactly what it sees in production.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { ROOT } from './cli.js';

export interface HeldLock {
  readonly child: ChildProcess;
  /** Ends the transaction and the process. */
  release(): Promise<void>;
}

const SCRIPT = `
const Database = require('better-sqlite3');
const db = new Database(process.argv[1], { timeout: 10000 });
db.exec('BEGIN IMMEDIATE');
process.stdout.write('locked\\n');
process.stdin.on('data', () => {});
process.stdin.on('end', () => { db.exec('ROLLBACK'); db.close(); process.exit(0); });
setTimeout(() => process.exit(0), Number(process.argv[2]));
`;

/** Resolves once `path` is write-locked by another process, for at most `maxMs`. */
export async function holdWriteLock(path: string, maxMs = 60_000): Promise<HeldLock> {
  const child = spawn(process.execPath, ['-e', SCRIPT, path, String(maxMs)], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      if (d.toString().includes('locked')) resolve();
    });
    void exited.then(() => reject(new Error(`the lock holder exited: ${err}`)));
  });
  return {
    child,
    release: async () => {
      child.stdin?.end();
      await exited;
    },
  };
}
