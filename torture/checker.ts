/**
 * The torture checker: judges a log of requests against the promises an ID
 * service makes, without any of the service's code.
 *
 * - Repeats: an ID seen twice in one namespace (tag, or snowflake layout),
 *   with both holders. Never allowed, whatever the faults.
 * - Short batches: an answer with fewer IDs than asked (batches are all or nothing).
 * - Outside: an ID below/above the tag's range, or a snowflake ID whose time
 *   field lies outside the run (with slack) or whose node field is not one the
 *   scenario allows.
 * - Order: IDs of a key increase within one answering process (a request that
 *   ended before another began has only smaller IDs), and, for `global` keys
 *   (strict tags), across all processes.
 * - Unledgered: an ID of a segment key that no range of the store's ledger
 *   covers (the scenario asked the store through `sequoia audit`: the
 *   verdict comes in the spec), with its holder.
 * - Errors by code, availability (answered requests / all), latency p50/p99,
 *   and the gap rate of segment keys (IDs in [min, max] never handed out).
 */
import type { RequestRecord } from './record.js';

export interface SnowflakeLayoutSpec {
  readonly epochMs: number;
  readonly unitMs: number;
  readonly timeBits: number;
  /** Bits between time and sequence (datacenter + worker, shard, …). */
  readonly nodeBits: number;
  readonly seqBits: number;
  /** Node field values allowed; absent: any. */
  readonly nodes?: readonly number[] | undefined;
}

export interface KeySpec {
  /** Smallest and largest legal ID (segment tags: start and 2^63-1). */
  readonly min?: bigint | undefined;
  readonly max?: bigint | undefined;
  /** `process`: increasing within each answering process; `global`: across all; `none`. */
  readonly order?: 'process' | 'global' | 'none' | undefined;
  readonly layout?: SnowflakeLayoutSpec | undefined;
}

export interface CheckSpec {
  /** By `generator:key`, e.g. `segment:order`, `snowflake:twitter`. A key without a spec gets the defaults. */
  readonly keys?: Readonly<Record<string, KeySpec>>;
  /** Default order promise for keys without a spec. Default `process`. */
  readonly defaultOrder?: 'process' | 'global' | 'none';
  /** Harness time window the snowflake time fields must fall in, with slack (ms). */
  readonly window?: { readonly from: number; readonly to: number; readonly slackMs: number } | undefined;
  /**
   * The combination is refused by design and the scenario asserted the
   * refusal (exit status and message): what it saw. Such a scenario reports
   * "refused as designed", never a plain pass.
   */
  readonly refused?: string | undefined;
  /** By `generator:key`: what the store's range ledger said of the IDs the clients were given (`harness/ledger.ts`). */
  readonly ledger?: Readonly<Record<string, LedgerVerdict>> | undefined;
}

/** The range ledger's answer for one key's IDs. */
export interface LedgerVerdict {
  /** Distinct IDs asked about. */
  readonly checked: number;
  /** How many of them no ledger range covers. */
  readonly uncovered: number;
  /** Some of them (as decimal strings). */
  readonly examples: readonly string[];
}

export interface Holder {
  readonly client: string;
  readonly server: string;
  readonly pid?: number | undefined;
  readonly start: number;
  readonly end: number;
}

export interface Finding {
  readonly key: string;
  readonly id: string;
  readonly detail: string;
  readonly first?: Holder | undefined;
  readonly second?: Holder | undefined;
}

export interface CheckResult {
  readonly requests: number;
  readonly idsChecked: number;
  readonly repeats: Finding[];
  readonly shortBatches: Finding[];
  readonly outside: Finding[];
  readonly orderBroken: Finding[];
  /** IDs covered by no range of the store's range ledger (only keys whose ledger the scenario checked). */
  readonly unledgered: Finding[];
  readonly errorsByCode: Record<string, number>;
  /** Answered requests / all requests, in percent. */
  readonly availability: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Segment keys: IDs in [min, max] never handed out, over the span. */
  readonly gapRate: number;
  /** Full counts (the lists keep the first few findings only). */
  readonly counts: {
    readonly repeats: number;
    readonly shortBatches: number;
    readonly outside: number;
    readonly orderBroken: number;
    readonly unledgered: number;
  };
  /** True when nothing broke a promise (errors are allowed; they are the truth told). */
  readonly ok: boolean;
}

const MAX_FINDINGS = 20;
const MAX_I63 = (1n << 63n) - 1n;

const holder = (r: RequestRecord): Holder => ({ client: r.client, server: r.server, pid: r.pid, start: r.start, end: r.end });

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round((sorted[i] as number) * 100) / 100;
}

function push(list: Finding[], f: Finding, counter: { n: number }): void {
  counter.n++;
  if (list.length < MAX_FINDINGS) list.push(f);
}

interface Span {
  readonly lo: bigint;
  readonly hi: bigint;
  readonly r: RequestRecord;
}

/**
 * Order within one sequence of answers (one process, or all for global keys):
 * sorted by start, every answer must lie above every answer that ENDED before
 * it started. Concurrent answers are not ordered against each other.
 */
function checkOrder(key: string, spans: Span[], out: Finding[], counter: { n: number }): void {
  spans.sort((a, b) => a.r.start - b.r.start);
  const byEnd = [...spans].sort((a, b) => a.r.end - b.r.end);
  let j = 0;
  let best: Span | undefined;
  for (const s of spans) {
    while (j < byEnd.length && (byEnd[j] as Span).r.end < s.r.start) {
      const e = byEnd[j] as Span;
      if (best === undefined || e.hi > best.hi) best = e;
      j++;
    }
    if (best !== undefined && s.lo <= best.hi) {
      push(
        out,
        {
          key,
          id: s.lo.toString(),
          detail: `answer starting at ${s.lo} came after an answer that reached ${best.hi}`,
          first: holder(best.r),
          second: holder(s.r),
        },
        counter,
      );
    }
  }
}

export function check(records: readonly RequestRecord[], spec: CheckSpec = {}): CheckResult {
  const repeats: Finding[] = [];
  const shortBatches: Finding[] = [];
  const outside: Finding[] = [];
  const orderBroken: Finding[] = [];
  const unledgered: Finding[] = [];
  const counts = { repeats: { n: 0 }, short: { n: 0 }, outside: { n: 0 }, order: { n: 0 }, unledgered: { n: 0 } };
  const errorsByCode: Record<string, number> = {};
  const latencies: number[] = [];
  const seen = new Map<string, Map<string, RequestRecord>>();
  const spansByKey = new Map<string, Span[]>();
  const segmentRange = new Map<string, { lo: bigint; hi: bigint; n: number }>();
  let ok = 0;
  let idsChecked = 0;

  for (const r of records) {
    latencies.push(r.end - r.start);
    if (r.error !== undefined) {
      errorsByCode[r.error] = (errorsByCode[r.error] ?? 0) + 1;
      continue;
    }
    ok++;
    const ns = `${r.generator}:${r.key}`;
    const ks = spec.keys?.[ns] ?? {};
    // A client's buffer (no pid: the SDK) may join IDs of several servers in one answer.
    const ordered = r.pid !== undefined && (ks.order ?? spec.defaultOrder ?? 'process') !== 'none';
    const ids = r.ids ?? [];
    if (ids.length < r.asked) {
      push(shortBatches, { key: ns, id: ids[0] ?? '', detail: `asked ${r.asked}, got ${ids.length}`, first: holder(r) }, counts.short);
    }
    let map = seen.get(ns);
    if (map === undefined) seen.set(ns, (map = new Map()));
    let lo: bigint | undefined;
    let hi: bigint | undefined;
    let prev: bigint | undefined;
    for (const text of ids) {
      idsChecked++;
      const first = map.get(text);
      if (first !== undefined) {
        push(repeats, { key: ns, id: text, detail: 'handed out twice', first: holder(first), second: holder(r) }, counts.repeats);
      } else map.set(text, r);
      if (r.generator === 'uuid') continue;
      let v: bigint;
      try {
        v = BigInt(text);
      } catch {
        push(outside, { key: ns, id: text, detail: 'not a decimal integer', first: holder(r) }, counts.outside);
        continue;
      }
      const why = outsideReason(v, ks, r, spec);
      if (why !== undefined) push(outside, { key: ns, id: text, detail: why, first: holder(r) }, counts.outside);
      if (ordered && prev !== undefined && v <= prev) {
        push(orderBroken, { key: ns, id: text, detail: `within one answer ${v} follows ${prev}`, first: holder(r) }, counts.order);
      }
      prev = v;
      if (lo === undefined || v < lo) lo = v;
      if (hi === undefined || v > hi) hi = v;
    }
    if (lo === undefined || hi === undefined) continue;
    const spanList = spansByKey.get(ns) ?? [];
    spanList.push({ lo, hi, r });
    spansByKey.set(ns, spanList);
    if (r.generator === 'segment') {
      const g = segmentRange.get(ns);
      segmentRange.set(
        ns,
        g === undefined ? { lo, hi, n: ids.length } : { lo: lo < g.lo ? lo : g.lo, hi: hi > g.hi ? hi : g.hi, n: g.n + ids.length },
      );
    }
  }

  for (const [ns, spans] of spansByKey) {
    const order = spec.keys?.[ns]?.order ?? spec.defaultOrder ?? 'process';
    if (order === 'none') continue;
    if (order === 'global') {
      // Answers without a pid came through a client's buffer (the SDK), which keeps no global order.
      checkOrder(
        ns,
        spans.filter((s) => s.r.pid !== undefined),
        orderBroken,
        counts.order,
      );
      continue;
    }
    const byProcess = new Map<string, Span[]>();
    for (const s of spans) {
      // Without a pid the answering process is unknown: no order to hold it to.
      if (s.r.pid === undefined) continue;
      const k = `${s.r.server}/${s.r.pid}`;
      const l = byProcess.get(k) ?? [];
      l.push(s);
      byProcess.set(k, l);
    }
    for (const l of byProcess.values()) checkOrder(ns, l, orderBroken, counts.order);
  }

  for (const [ns, v] of Object.entries(spec.ledger ?? {})) {
    const map = seen.get(ns);
    for (const id of v.examples) {
      const r = map?.get(id);
      push(unledgered, { key: ns, id, detail: "covered by no range of the store's ledger", first: r && holder(r) }, counts.unledgered);
    }
    // The verdict may name fewer IDs than it counts.
    counts.unledgered.n += Math.max(0, v.uncovered - v.examples.length);
  }

  let span = 0n;
  let handed = 0n;
  for (const g of segmentRange.values()) {
    span += g.hi - g.lo + 1n;
    handed += BigInt(g.n);
  }
  latencies.sort((a, b) => a - b);
  const gapRate = span === 0n ? 0 : Number(((span - handed) * 1_000_000n) / span) / 1_000_000;
  return {
    requests: records.length,
    idsChecked,
    repeats: repeats,
    shortBatches: shortBatches,
    outside: outside,
    orderBroken: orderBroken,
    unledgered,
    errorsByCode,
    availability: records.length === 0 ? 100 : Math.round((ok / records.length) * 10_000) / 100,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    gapRate,
    counts: {
      repeats: counts.repeats.n,
      shortBatches: counts.short.n,
      outside: counts.outside.n,
      orderBroken: counts.order.n,
      unledgered: counts.unledgered.n,
    },
    ok: counts.repeats.n + counts.short.n + counts.outside.n + counts.order.n + counts.unledgered.n === 0,
  };
}

function outsideReason(v: bigint, ks: KeySpec, r: RequestRecord, spec: CheckSpec): string | undefined {
  if (v < 0n || v > MAX_I63) return 'outside a signed 64-bit integer';
  if (ks.min !== undefined && v < ks.min) return `below the key's first ID ${ks.min}`;
  if (ks.max !== undefined && v > ks.max) return `above the key's last ID ${ks.max}`;
  const l = ks.layout;
  if (l === undefined) return undefined;
  const seqBits = BigInt(l.seqBits);
  const nodeBits = BigInt(l.nodeBits);
  const node = Number((v >> seqBits) & ((1n << nodeBits) - 1n));
  const t = Number(v >> (seqBits + nodeBits));
  if (t >= 2 ** l.timeBits) return 'time field wider than the layout';
  if (l.nodes !== undefined && !l.nodes.includes(node)) return `node ${node} is none of the scenario's (${l.nodes.join(', ')})`;
  const w = spec.window;
  if (w !== undefined) {
    const ms = l.epochMs + t * l.unitMs;
    // The server's clock may be faked; the window's slack covers the jumps a scenario makes.
    if (ms < w.from - w.slackMs || ms > w.to + w.slackMs) return `time ${new Date(ms).toISOString()} outside the run (${r.route})`;
  }
  return undefined;
}
