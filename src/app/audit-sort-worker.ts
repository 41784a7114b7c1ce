/**
 * The entry of `sequoia audit`'s sort thread (`audit-sort.ts`): each message
 * is a full chunk to sort and write as a run; the chunk goes back with the
 * answer, then the flag the command may be blocked on is raised. Listed in
 * the bundle (scripts/bundle.mjs) so it sits beside the chunk that starts it.
 */
import { type MessagePort, workerData } from 'node:worker_threads';
import { writeSortedRun } from '../service/audit/id-sort.js';
import type { RunWritten } from './audit-sort.js';

const { port, flag } = workerData as { port: MessagePort; flag: Int32Array };

port.on('message', (m: { buffer: ArrayBuffer; n: number; path: string }) => {
  let error: string | undefined;
  try {
    writeSortedRun(new BigInt64Array(m.buffer), m.n, m.path);
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  }
  const answer: RunWritten = { buffer: m.buffer, error };
  port.postMessage(answer, [m.buffer]);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
