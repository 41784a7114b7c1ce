/**
 * `audit --db postgres://…` receives its COPY on a thread of its own
 * (copy-receiver-worker.ts): the driver's share of the read (socket reads,
 * the protocol's message frames, pg-copy-streams' buffers) runs beside the
 * main thread's parse and sort instead of between them (BENCHMARKS.md, "The
 * COPY on a thread of its own"). This module is both sides' agreement and
 * the main side.
 */
import { Worker } from 'node:worker_threads';
import { idSourceError } from '../kit/pk-bench/id-batches.js';

/**
 * The text crosses in BATCHES buffers of BATCH_BYTES that the main thread
 * hands back once parsed: with none free the receiver pauses the COPY stream,
 * and so its socket and the server's sends, so a slow parse holds memory to
 * about 8 MiB instead of the table.
 */
export const BATCH_BYTES = 1 << 20;
export const BATCHES = 8;

export interface ReceiverData {
  readonly url: string;
  readonly query: string;
}

/** What the receiver posts, in order: text batches, then one end or one error. */
export type FromReceiver =
  | { readonly kind: 'text'; readonly buffer: ArrayBuffer; readonly length: number }
  | { readonly kind: 'end' }
  | { readonly kind: 'error'; readonly error: { readonly code?: string; readonly errno?: string; readonly message: string } };

/** The query as COPY takes it: without its closing semicolon (a cursor's DECLARE took one); the newline ends a closing -- comment. */
export const copyStatement = (query: string): string => `COPY (${query.replace(/[\s;]+$/, '')}\n) TO STDOUT`;

/**
 * Where the receiver's entry is: beside this module, in dist/adapters/postgres/
 * (the compiled tree) or dist/pkg/ (a bundle entry of the same name).
 */
const receiverEntry = (): URL => new URL('./copy-receiver-worker.js', import.meta.url);

/**
 * Runs the COPY on the receiver thread and calls `onChunk` with its text, in
 * order, on this thread. `onChunk` may throw to stop the read: the thread is
 * ended, which closes its connection, so the server stops at its next send
 * instead of producing the rest; the promise rejects with that error.
 */
export function receiveCopy(data: ReceiverData, onChunk: (chunk: Uint8Array) => void): Promise<void> {
  const worker = new Worker(receiverEntry(), { workerData: data });
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (error?: unknown): void => {
      if (settled) return;
      settled = true;
      const done = () => (error === undefined ? resolve() : reject(error));
      void worker.terminate().then(done, done);
    };
    worker.on('message', (m: FromReceiver) => {
      if (settled) return;
      if (m.kind === 'end') return settle();
      if (m.kind === 'error') return settle(idSourceError('PostgreSQL', m.error));
      try {
        onChunk(new Uint8Array(m.buffer, 0, m.length));
      } catch (e) {
        return settle(e);
      }
      worker.postMessage(m.buffer, [m.buffer]);
    });
    worker.on('error', (e) => settle(idSourceError('PostgreSQL', e)));
    worker.on('exit', (code) => settle(idSourceError('PostgreSQL', new Error(`the COPY reader thread stopped (exit code ${code})`))));
  });
}
