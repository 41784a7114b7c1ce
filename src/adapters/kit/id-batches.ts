/**
 * What every `IdSource` shares: the size of the batches it hands over, and
 * how a first-column value becomes decimal text (never through a double, so
 * no ID above 2^53 is rounded).
 */

export const ID_BATCH = 20_000;

/** A first-column value as decimal text; NULL stays null. */
export function idText(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}

/** Collects values for `onBatch`, handing over each full batch of ID_BATCH and, at `flush`, the rest. */
export class IdBatcher {
  private batch: Array<string | null> = [];

  constructor(private readonly onBatch: (values: ReadonlyArray<string | null>) => void) {}

  push(v: unknown): void {
    this.batch.push(idText(v));
    if (this.batch.length >= ID_BATCH) this.flush();
  }

  flush(): void {
    if (this.batch.length === 0) return;
    const b = this.batch;
    this.batch = [];
    this.onBatch(b);
  }
}
