/**
 * The receiver thread of `audit --db postgres://…` (copy-receiver.ts): runs
 * the COPY in a read-only transaction and posts its text in batches, keeping
 * no more than the batches the main thread has handed back. A batch goes as
 * soon as the main thread holds none (it is waiting), and fills while the
 * main thread parses: large batches under load, a bad first row seen at once.
 * Listed in the bundle (scripts/bundle.mjs) so it sits beside the chunk that starts it.
 */
import type { Readable } from 'node:stream';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { BATCH_BYTES, BATCHES, copyStatement, type FromReceiver, type ReceiverData } from './copy-receiver.js';

const port = parentPort as MessagePort;
const { url, query } = workerData as ReceiverData;
const free: ArrayBuffer[] = Array.from({ length: BATCHES }, () => new ArrayBuffer(BATCH_BYTES));
let batch: Uint8Array | undefined;
let used = 0;
let inFlight = 0;
/** Buffers made past the pool for a chunk's tail while every batch was out: dropped, not kept, when they come back. */
let extra = 0;
let copy: Readable | undefined;

function post(m: FromReceiver, transfer: ArrayBuffer[] = []): void {
  port.postMessage(m, transfer);
}

function send(): void {
  if (batch === undefined || used === 0) return;
  post({ kind: 'text', buffer: batch.buffer as ArrayBuffer, length: used }, [batch.buffer as ArrayBuffer]);
  inFlight++;
  batch = undefined;
  used = 0;
}

function put(chunk: Buffer): void {
  for (let at = 0; at < chunk.length;) {
    if (batch === undefined) {
      let buffer = free.pop();
      if (buffer === undefined) {
        // Past the last free batch (a chunk's tail), one more: the stream pauses below until batches come back.
        extra++;
        buffer = new ArrayBuffer(BATCH_BYTES);
      }
      batch = new Uint8Array(buffer);
    }
    const n = Math.min(chunk.length - at, batch.length - used);
    batch.set(chunk.subarray(at, at + n), used);
    used += n;
    at += n;
    if (used === batch.length) send();
  }
  if (inFlight === 0) send();
  if (free.length === 0) copy?.pause();
}

port.on('message', (buffer: ArrayBuffer) => {
  inFlight--;
  if (extra > 0) extra--;
  else free.push(buffer);
  if (inFlight === 0) send();
  copy?.resume();
});

const client = new pg.Client({ connectionString: url });
// A connection lost between two statements is also emitted here: the statement that waits on it fails with it.
client.on('error', () => undefined);
try {
  await client.connect();
  await client.query('BEGIN READ ONLY');
  await new Promise<void>((resolve, reject) => {
    copy = client.query(copyTo(copyStatement(query)));
    copy.on('data', put);
    copy.on('end', resolve);
    copy.on('error', reject);
  });
  send();
  await client.query('ROLLBACK');
  post({ kind: 'end' });
} catch (e) {
  const err = e as { code?: unknown; errno?: unknown; message?: unknown };
  post({
    kind: 'error',
    error: {
      ...(err.code !== undefined && { code: String(err.code) }),
      ...(err.errno !== undefined && { errno: String(err.errno) }),
      message: typeof err.message === 'string' ? err.message : String(e),
    },
  });
} finally {
  port.unref();
  await client.end().catch(() => undefined);
}
