/**
 * Large batches wait their turn; single IDs do not.
 *
 * Every request whose data arrives in one turn of the event loop is run in
 * that turn, one after another: twenty connections asking `count=10000` put
 * twenty batches (each a few ms of taking, encoding and writing 10,000 IDs)
 * in front of every single-ID request that arrived with them (measured:
 * single-ID p99 from ~10 ms to 210–830 ms; BENCHMARKS.md, "Batches next to
 * single IDs"). Here a batch (more than `LANE_MIN_COUNT` IDs) takes a place in
 * a queue instead, and the queue is served from `setImmediate`, at most
 * `idsPerTurn` IDs of batches per turn (always at least one batch): between
 * two turns Node reads the sockets again and answers what arrived, so a
 * single request waits for at most one turn's worth of batch work, however
 * many batches are queued. Batches keep their order; none is refused. The
 * hot route's fast path (fast-path.ts) leaves batches to the routes, which
 * take their turn here.
 */

/** Requests for more IDs than this take a turn in the lane. */
export const LANE_MIN_COUNT = 100;

export class BatchLane {
  private readonly idsPerTurn: number;
  private readonly waiting: { readonly count: number; readonly go: () => void }[] = [];
  private head = 0;
  private scheduled = false;

  constructor(options: { readonly idsPerTurn?: number } = {}) {
    this.idsPerTurn = options.idsPerTurn ?? 10_000;
  }

  /** Whether a request for `count` IDs takes a turn (otherwise it runs at once). */
  static takesTurn(count: number): boolean {
    return count > LANE_MIN_COUNT;
  }

  /** Batches waiting for their turn. */
  get queued(): number {
    return this.waiting.length - this.head;
  }

  /** Resolves when it is this batch's turn: run the batch right then (in the same microtask run). */
  turn(count: number): Promise<void> {
    return new Promise((go) => {
      this.waiting.push({ count, go });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.serve());
  }

  private serve(): void {
    this.scheduled = false;
    let ids = 0;
    while (this.head < this.waiting.length) {
      const next = this.waiting[this.head] as { readonly count: number; readonly go: () => void };
      if (ids > 0 && ids + next.count > this.idsPerTurn) break;
      this.head++;
      ids += next.count;
      next.go();
    }
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    } else {
      if (this.head > 1024) {
        this.waiting.splice(0, this.head);
        this.head = 0;
      }
      this.schedule();
    }
  }
}
