/**
 * How often each fault kind, operator action or setup fired in a world, for
 * the coverage report (cli.ts, sim.test.ts): every name a world can count is
 * listed from the start, so one that never fired reports 0.
 */
export class Coverage<K extends string = string> extends Map<string, number> {
  constructor(names: Iterable<K> = []) {
    super();
    this.expect(names);
  }

  /** More names that may fire (a world run on another's counts adds its own). */
  expect(names: Iterable<string>): void {
    for (const k of names) this.set(k, 0);
  }

  count(k: K): void {
    this.set(k, (this.get(k) ?? 0) + 1);
  }
}
