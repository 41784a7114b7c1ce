/** Counts the stores that use one connection pool (a backend's segment and lease stores); the last one to release ends it. */
export class PoolUsers {
  private users = 0;
  private ended = false;

  constructor(private readonly end: () => Promise<void>) {}

  retain(): void {
    this.users++;
  }

  async release(): Promise<void> {
    this.users--;
    if (this.users > 0 || this.ended) return;
    this.ended = true;
    // A pool already broken has nothing left to release.
    await this.end().catch(() => {});
  }
}
