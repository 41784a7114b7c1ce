/**
 * `sequoia audit`'s full chunks sorted and written in a worker thread
 * (`audit-sort-worker.ts`) while the command reads the next chunk: on two
 * cores reading and sorting overlap. The chunk is transferred, not copied
 * or shared (a sort of shared memory copies it), and comes back with the
 * answer; the sorter blocks (Atomics.wait) only when the next chunk is full
 * before the previous run is written. The thread starts at the first spill:
 * an input that fits one chunk starts none.
 */
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from 'node:worker_threads';
import type { RunWriter } from '../service/audit/id-sort.js';

/** The worker's answer: the chunk back, or why the run could not be written. */
export interface RunWritten {
  readonly buffer: ArrayBuffer;
  readonly error?: string | undefined;
}

export class ThreadRunWriter implements RunWriter {
  private worker: Worker | undefined;
  private port: MessagePort | undefined;
  /** [0]: 0 while a run is being written, 1 once its answer was posted. */
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private pending = false;

  start(chunk: BigInt64Array, n: number, path: string): void {
    if (this.pending) throw new Error('a run is already being written');
    const port = this.port ?? this.startWorker();
    Atomics.store(this.flag, 0, 0);
    port.postMessage({ buffer: chunk.buffer, n, path }, [chunk.buffer as ArrayBuffer]);
    this.pending = true;
  }

  wait(): BigInt64Array | undefined {
    if (!this.pending || this.port === undefined) return undefined;
    this.pending = false;
    Atomics.wait(this.flag, 0, 0);
    const m = receiveMessageOnPort(this.port)?.message as RunWritten | undefined;
    if (m === undefined) throw new Error('audit: the sort thread gave no answer');
    if (m.error !== undefined) throw new Error(`audit: writing a sorted run: ${m.error}`);
    return new BigInt64Array(m.buffer);
  }

  async close(): Promise<void> {
    this.port?.close();
    await this.worker?.terminate();
  }

  private startWorker(): MessagePort {
    const { port1, port2 } = new MessageChannel();
    this.worker = new Worker(new URL('./audit-sort-worker.js', import.meta.url), {
      workerData: { port: port2, flag: this.flag },
      transferList: [port2],
    });
    // Neither holds the process open: the command waits on the runs itself.
    this.worker.unref();
    port1.unref();
    this.port = port1;
    return port1;
  }
}
