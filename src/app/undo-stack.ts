/**
 * A start-up as a stack of steps: each step that succeeds registers how to
 * undo it; when a later step fails, what was done is undone in reverse order,
 * each undo once. Node 20 has no `AsyncDisposableStack` (it needs a flag until
 * Node 24), so this is the project's one small stand-in for it.
 */
export class UndoStack {
  readonly #undos: { readonly name: string; readonly undo: () => unknown }[] = [];

  /** Registers the undo of a step that has just succeeded. */
  push(name: string, undo: () => unknown): void {
    this.#undos.push({ name, undo });
  }

  /** Runs a step; once it has succeeded, registers its undo (given the step's result). */
  async step<T>(name: string, run: () => T | Promise<T>, undo?: (done: T) => unknown): Promise<T> {
    const done = await run();
    if (undo) this.push(name, () => undo(done));
    return done;
  }

  /** Drops a step's undo whose duty a later step has taken over (the store, once the IdService owns and closes it). */
  handOver(name: string): void {
    const i = this.#undos.findIndex((u) => u.name === name);
    if (i >= 0) this.#undos.splice(i, 1);
  }

  /**
   * Undoes every registered step, last first, each once (a second call finds
   * nothing left). An undo that fails does not stop the ones below it: the
   * start-up's own error is the one worth reporting.
   */
  async unwind(): Promise<void> {
    for (let u = this.#undos.pop(); u !== undefined; u = this.#undos.pop()) {
      try {
        await u.undo();
      } catch {
        // the next undo still runs
      }
    }
  }

  /** The names of the steps that would be undone, last first (for tests and logs). */
  pending(): string[] {
    return this.#undos.map((u) => u.name).reverse();
  }
}
