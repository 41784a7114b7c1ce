/**
 * `worker-node:URL`: the worker id is the ID of a new row of uid-generator's
 * WORKER_NODE table, inserted at every acquire exactly as uid-generator's
 * DisposableWorkerIdAssigner does at every start. Both draw from the table's
 * one AUTO_INCREMENT sequence, so a Baidu generator and a Sequoia server never
 * hold the same id, and no id is ever used twice (never leased, never given
 * back). An id past the layout's worker bits is refused, as uid-generator's
 * DefaultUidGenerator refuses `workerId > maxWorkerId`: it never wraps.
 */
import { hostname } from 'node:os';
import { type Clock, systemClock } from '../../core/clock.js';
import { UnavailableError } from '../../core/errors.js';
import type { IdSpace, WorkerGrant, WorkerIdProvider } from '../../ports/worker-id-provider.js';
import type { WorkerNodeRow, WorkerNodeTable } from '../../ports/worker-node-table.js';

/** uid-generator's WorkerNodeType.ACTUAL: a process on a machine, not a container with a given host and port. */
const ACTUAL = 2;

export interface UidWorkerNodeOptions {
  /** HOST_NAME; default the machine's host name. */
  readonly hostName?: string | undefined;
  /** The server's port, written into PORT. */
  readonly port?: number | undefined;
  /** The launch time written into the row. Default the clock's now. */
  readonly now?: () => Date;
  /** Default systemClock. */
  readonly clock?: Clock;
}

export class UidWorkerNodeProvider implements WorkerIdProvider {
  readonly kind: string;
  readonly leased = false;
  readonly ttlMs = undefined;
  private lastTooLarge: bigint | undefined;

  constructor(
    private readonly table: WorkerNodeTable,
    private readonly o: UidWorkerNodeOptions = {},
  ) {
    this.kind = `worker-node(${table.kind})`;
  }

  /** The row this start inserts: PORT marks it as Sequoia's (uid-generator writes `millis-random` there). */
  row(): WorkerNodeRow {
    const now = this.o.now ? this.o.now() : new Date((this.o.clock ?? systemClock).now());
    const pad = (n: number) => String(n).padStart(2, '0');
    return {
      hostName: (this.o.hostName ?? hostname()).slice(0, 64),
      port: `sequoia:${this.o.port ?? 0}:${process.pid}:${now.getTime()}`.slice(0, 64),
      type: ACTUAL,
      launchDate: `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`,
    };
  }

  async acquire(space: IdSpace): Promise<WorkerGrant> {
    // The table's ids only grow: once one was past the layout, every later one is; retries insert no more rows.
    const id =
      this.lastTooLarge !== undefined && this.lastTooLarge >= BigInt(space.workerCount)
        ? this.lastTooLarge
        : BigInt(await this.table.addWorkerNode(this.row()));
    if (id >= BigInt(space.workerCount)) {
      this.lastTooLarge = id;
      throw new UnavailableError(
        'ID_SPACE_EXHAUSTED',
        `worker-node: ${this.table.kind} gave worker id ${id}, beyond layout ${space.label}'s worker ids 0..${space.workerCount - 1}; ids of WORKER_NODE only grow and are never reused: use a layout with more worker bits (uid-generator's own has 22), or another worker id provider`,
      );
    }
    // A new row's id was never used by anyone.
    return { workerId: Number(id), generation: 1, afterTick: -1, validUntil: Number.POSITIVE_INFINITY };
  }

  async renew(_space: IdSpace, grant: WorkerGrant): Promise<WorkerGrant> {
    return grant;
  }

  async release(): Promise<void> {}

  async close(): Promise<void> {
    await this.table.close();
  }
}
