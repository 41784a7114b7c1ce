/**
 * `static`: the operator promises the id is unique. Without a store nothing
 * checks it (use LeaseWorkerIdProvider with a fixed id to have it registered).
 */
import { UnavailableError } from '../../core/errors.js';
import type { IdSpace, WorkerGrant, WorkerIdProvider } from '../../ports/worker-id-provider.js';

export class StaticWorkerIdProvider implements WorkerIdProvider {
  readonly kind: string;
  readonly leased = false;
  readonly ttlMs = undefined;

  constructor(
    private readonly workerId: number,
    kind = 'static',
  ) {
    this.kind = kind;
  }

  async acquire(space: IdSpace, exclude: readonly number[] = []): Promise<WorkerGrant> {
    if (this.workerId >= space.workerCount) {
      throw new UnavailableError(
        'LEASE_LOST',
        `worker id ${this.workerId} is outside layout ${space.label}'s range 0..${space.workerCount - 1}`,
      );
    }
    if (exclude.includes(this.workerId))
      throw new UnavailableError('LEASE_LOST', 'a static worker id has no backup ids; use sql-lease for backup-worker');
    return { workerId: this.workerId, generation: 0, afterTick: -1, validUntil: Number.POSITIVE_INFINITY };
  }

  async renew(_space: IdSpace, grant: WorkerGrant): Promise<WorkerGrant> {
    return grant;
  }

  async release(): Promise<void> {}
  async close(): Promise<void> {}
}
