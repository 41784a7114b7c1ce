/**
 * A connection pool shared by the stores of one backend (its segment and
 * lease stores): where it is, for their errors, and how many stores use it;
 * the last one to release ends it.
 */
import { storeTarget } from './store-boundary.js';

export abstract class SharedPool<P extends { end(): Promise<void> }> {
  abstract readonly pool: P;
  /** host:port, database: named in every store error. */
  readonly target: string | undefined;
  private users = 0;
  private ended = false;

  protected constructor(url: string | undefined, defaultPort: number) {
    this.target = storeTarget(url, defaultPort);
  }

  /** A store starts using the pool; each retain is matched by one `release`. */
  retain(): this {
    this.users++;
    return this;
  }

  /** A store is done; the last one ends the pool. */
  async release(): Promise<void> {
    this.users--;
    if (this.users > 0 || this.ended) return;
    this.ended = true;
    // A pool already broken has nothing left to release.
    await this.pool.end().catch(() => {});
  }
}
