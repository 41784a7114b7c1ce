/**
 * Which worker ids were held at which ticks, from the lease ledger's holdings
 * (ports/lease-ledger.ts), answered without I/O for each of millions of IDs
 * (`sequoia audit --layout --store`): per worker id, the holdings' tick
 * ranges merged and searched by bisection.
 */
export interface TickSpan {
  readonly workerId: number;
  readonly fromTick: number;
  readonly untilTick: number;
}

/** The spans that cover `tick` (of holdings: who held their worker id then). */
export function spansAt<T extends TickSpan>(spans: readonly T[], tick: number): T[] {
  return spans.filter((s) => s.fromTick <= tick && tick <= s.untilTick);
}

export class HoldingIndex {
  /** Per worker id: merged [from, until] pairs, flat and sorted. */
  private readonly spans = new Map<number, number[]>();

  constructor(holdings: readonly TickSpan[]) {
    const byWorker = new Map<number, Array<[number, number]>>();
    for (const h of holdings) {
      if (h.untilTick < h.fromTick) continue;
      const list = byWorker.get(h.workerId);
      if (list) list.push([h.fromTick, h.untilTick]);
      else byWorker.set(h.workerId, [[h.fromTick, h.untilTick]]);
    }
    for (const [w, list] of byWorker) {
      list.sort((a, b) => a[0] - b[0]);
      const flat: number[] = [];
      for (const [from, until] of list) {
        const last = flat.length - 1;
        if (last > 0 && from <= (flat[last] as number) + 1) flat[last] = Math.max(flat[last] as number, until);
        else flat.push(from, until);
      }
      this.spans.set(w, flat);
    }
  }

  /** Whether anyone held `workerId` at `tick`. */
  held(workerId: number, tick: number): boolean {
    const flat = this.spans.get(workerId);
    if (!flat) return false;
    let lo = 0;
    let hi = flat.length / 2 - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (tick < (flat[2 * mid] as number)) hi = mid - 1;
      else if (tick > (flat[2 * mid + 1] as number)) lo = mid + 1;
      else return true;
    }
    return false;
  }
}
