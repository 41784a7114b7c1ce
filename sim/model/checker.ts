/**
 * The promises, checked on every answer and after every event:
 * - no ID answered twice for a tag within one lineage (model/store.ts), nor
 *   twice by one server (its state dir) across lineages: its guard must see
 *   its own history through restores and re-creations;
 * - strict tags: an ID is above every ID of the tag answered before its
 *   request was sent;
 * - every delivered range is a ledger row of the store when it was applied
 *   (a restore with the ledger may take the row away later: the operator's
 *   act, not a hole, so it is not checked again);
 * - a server's answered ID is below its durable high-water mark (the mark is
 *   durable before the IDs it covers are handed out);
 * - STORE_ROLLBACK_DETECTED only on a tag the store really rolled back;
 * - only documented refusal codes;
 * - liveness once every fault healed (cluster.ts).
 */
import type { Delivered } from './store.js';

export interface Finding {
  readonly kind: string;
  readonly at: number;
  readonly message: string;
}

/** Codes a server may answer while faults last (DESIGN.md's table); anything else is a finding. */
export const REFUSALS = new Set([
  'SEGMENTS_EXHAUSTED',
  'STORE_UNAVAILABLE',
  'STORE_ROLLBACK_DETECTED',
  'TAG_NOT_FOUND',
  'SHUTTING_DOWN',
  'RATE_LIMITED',
]);

interface Answer {
  readonly server: string;
  readonly lineage: number;
  readonly at: number;
}

export class Checker {
  readonly findings: Finding[] = [];
  answered = 0;
  excusedRepeats = 0;
  /** Per tag and ID: who answered it (a list only once it was answered twice: most IDs never are). */
  private readonly seen = new Map<string, Map<bigint, Answer | Answer[]>>();
  /** Per process name and tag: the ranges delivered to it, newest last. */
  private readonly ranges = new Map<string, Delivered[]>();
  private readonly strictTop = new Map<string, bigint>();

  constructor(private readonly now: () => number) {}

  fail(kind: string, message: string): void {
    if (this.findings.length < 20) this.findings.push({ kind, at: this.now(), message });
  }

  delivered(d: Delivered, inLedger: boolean): void {
    const key = `${d.proc.name}/${d.tag}`;
    let list = this.ranges.get(key);
    if (!list) this.ranges.set(key, (list = []));
    list.push(d);
    // Enough for an answer delayed by seconds behind a strict tag's pipeline (found by seed 28 with 64).
    if (list.length > 4096) list.splice(0, 1024);
    if (!inLedger) this.fail('ledger', `${d.proc.name} got [${d.start}, ${d.end}) of ${d.tag}: no ledger row covers it`);
  }

  /** The lineage of the range delivered to `procName` that holds `id` (-1: none), as `answer` judges it. */
  lineageOf(procName: string, tag: string, id: bigint): number {
    const list = this.ranges.get(`${procName}/${tag}`) ?? [];
    for (let i = list.length - 1; i >= 0; i--) {
      const r = list[i] as Delivered;
      if (id >= r.start && id < r.end) return r.lineage;
    }
    return -1;
  }

  /** The strict order's bound for a request sent now (`key`: the tag and its lineage). */
  strictBound(key: string): bigint {
    return this.strictTop.get(key) ?? -1n;
  }

  answer(
    procName: string,
    server: string,
    tag: string,
    ids: readonly bigint[],
    durableMark: bigint | undefined,
    strict?: { readonly key: string; readonly bound: bigint | undefined },
  ): void {
    const strictBound = strict?.bound;
    const list = this.ranges.get(`${procName}/${tag}`) ?? [];
    let byTag = this.seen.get(tag);
    if (!byTag) this.seen.set(tag, (byTag = new Map()));
    for (const id of ids) {
      this.answered++;
      let lineage = -1;
      for (let i = list.length - 1; i >= 0; i--) {
        const r = list[i] as Delivered;
        if (id >= r.start && id < r.end) {
          lineage = r.lineage;
          break;
        }
      }
      if (lineage < 0) this.fail('ledger', `${procName} answered ${tag} ${id}: no range it was given holds it`);
      if (durableMark === undefined || id >= durableMark) {
        this.fail('mark-not-durable', `${procName} answered ${tag} ${id} while its durable high-water mark was ${durableMark ?? 'none'}`);
      }
      if (strictBound !== undefined && id <= strictBound) {
        this.fail(
          'strict-order',
          `${procName} answered strict ${tag} ${id}, not above ${strictBound} answered before the request was sent`,
        );
      }
      const now = this.now();
      const seen = byTag.get(id);
      const mine: Answer = { server, lineage, at: now };
      if (seen) {
        const prev = Array.isArray(seen) ? seen : [seen];
        const clash = prev.find((p) => p.lineage === lineage || p.server === server);
        if (clash) {
          this.fail(
            'duplicate',
            `${tag} ${id} answered twice: by ${clash.server} at ${clash.at.toFixed(0)} ms (lineage ${clash.lineage}), again by ${procName} (lineage ${lineage})`,
          );
        } else this.excusedRepeats++;
        prev.push(mine);
        if (prev !== seen) byTag.set(id, prev);
      } else byTag.set(id, mine);
      if (strict) {
        const top = this.strictTop.get(strict.key);
        if (top === undefined || id > top) this.strictTop.set(strict.key, id);
      }
    }
  }
}
