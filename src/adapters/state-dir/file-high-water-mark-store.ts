/**
 * High-water marks as one small file per tag under `<stateDir>/hwm/`. A write
 * goes to a temporary file that is fsynced and renamed over the old one, then
 * the directory is fsynced: after `put` returns, a SIGKILL or power loss keeps
 * the mark. File names are the tag in hex, since tags such as `..` are legal.
 *
 * Several processes may share a state directory: marks only ever come from
 * the store's own answers, which never go down, so a racing writer can at most
 * leave a lower (weaker, still correct) mark.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { HighWaterMark } from '../../core/segment/rollback-guard.js';
import type { HighWaterMarkStore } from '../../ports/high-water-mark-store.js';

interface FileRecord {
  mark: string;
  trippedAtEpoch?: number;
}

export class FileHighWaterMarkStore implements HighWaterMarkStore {
  private readonly dir: string;
  readonly where: string;

  constructor(stateDir: string) {
    this.dir = join(stateDir, 'hwm');
    this.where = `state dir ${stateDir}`;
    mkdirSync(this.dir, { recursive: true });
  }

  get(tag: string): HighWaterMark | undefined {
    let text: string;
    try {
      text = readFileSync(this.file(tag), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    const rec = JSON.parse(text) as FileRecord;
    return { mark: BigInt(rec.mark), trippedAtEpoch: rec.trippedAtEpoch };
  }

  put(tag: string, record: HighWaterMark): void {
    const file = this.file(tag);
    const tmp = `${file}.${process.pid}.tmp`;
    const body: FileRecord = { mark: record.mark.toString() };
    if (record.trippedAtEpoch !== undefined) body.trippedAtEpoch = record.trippedAtEpoch;
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, JSON.stringify(body));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
    const dfd = openSync(this.dir, 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  }

  private file(tag: string): string {
    return join(this.dir, `${Buffer.from(tag, 'utf8').toString('hex')}.json`);
  }
}

/** Keeps marks in memory only: for tests and for embedding without a state directory. */
export class MemoryHighWaterMarkStore implements HighWaterMarkStore {
  private readonly marks = new Map<string, HighWaterMark>();
  get(tag: string): HighWaterMark | undefined {
    return this.marks.get(tag);
  }
  put(tag: string, record: HighWaterMark): void {
    this.marks.set(tag, record);
  }
}
