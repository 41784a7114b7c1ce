/**
 * The kinds of primary key `sequoia bench pk` compares, and the keys of each,
 * made by the project's own generators as a running system would make them:
 *
 * - `sequence`: the database's own identity/AUTO_INCREMENT (the baseline);
 * - `segment`: Leaf-style segment IDs from several servers at once. Each
 *   simulated server holds a SegmentBuffer fed with ranges of `step` IDs from
 *   one shared counter (the store), so the servers insert into as many places
 *   of the key space at a time, as several servers do;
 * - `snowflake`: the twitter layout, one worker id per simulated server;
 * - `uuidv7` / `uuidv4`: 16 bytes (native uuid, BINARY(16), BLOB);
 * - `uuidv4-text`: UUIDv4 as its 36 characters;
 * - `ulid`: a UUIDv7 written as 26 ULID characters.
 *
 * No I/O: time and randomness come in through Clock and Random.
 */
import type { Clock } from '../clock.js';
import type { Random } from '../random.js';
import { InvalidArgumentError } from '../errors.js';
import { SegmentBuffer } from '../segment/segment-buffer.js';
import { SnowflakeGenerator } from '../snowflake/generator.js';
import { getLayout } from '../snowflake/layout.js';
import { UuidV4Generator } from '../uuid/uuid-v4.js';
import { UuidV7Generator } from '../uuid/uuid-v7.js';
import { PK_KIND_NAMES, type PkKindName } from './pk-kind-names.js';

export { PK_KIND_NAMES, type PkKindName };

export type PkKeyKind = 'sequence' | 'int64' | 'uuid' | 'text';

export interface PkKind {
  readonly name: PkKindName;
  readonly keyType: PkKeyKind;
  readonly textLength?: number;
  readonly description: string;
}

export const PK_KINDS: Readonly<Record<PkKindName, PkKind>> = {
  sequence: { name: 'sequence', keyType: 'sequence', description: "the database's own sequence / AUTO_INCREMENT (baseline)" },
  segment: { name: 'segment', keyType: 'int64', description: 'segment IDs from several servers interleaving, bigint' },
  snowflake: { name: 'snowflake', keyType: 'int64', description: 'snowflake (twitter layout), one worker per server, bigint' },
  uuidv7: { name: 'uuidv7', keyType: 'uuid', description: 'UUIDv7, 16 bytes (uuid / BINARY(16) / BLOB)' },
  uuidv4: { name: 'uuidv4', keyType: 'uuid', description: 'UUIDv4, 16 bytes (uuid / BINARY(16) / BLOB)' },
  'uuidv4-text': { name: 'uuidv4-text', keyType: 'text', textLength: 36, description: 'UUIDv4 as 36 characters of text' },
  ulid: { name: 'ulid', keyType: 'text', textLength: 26, description: 'ULID (a UUIDv7 as 26 Crockford Base32 characters)' },
};

/** Parses `--kinds a,b,c` (or `all`); the baseline is always included and first. */
export function parsePkKinds(list: string | undefined): PkKind[] {
  if (list === undefined || list === 'all') return PK_KIND_NAMES.map((n) => PK_KINDS[n]);
  const names = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const out: PkKind[] = [PK_KINDS.sequence];
  for (const n of names) {
    if (!(PK_KIND_NAMES as readonly string[]).includes(n)) {
      throw new InvalidArgumentError(`--kinds: unknown kind ${JSON.stringify(n)} (kinds: ${PK_KIND_NAMES.join(', ')}, or all)`);
    }
    const k = PK_KINDS[n as PkKindName];
    if (!out.includes(k)) out.push(k);
  }
  return out;
}

/** Makes the keys of one kind: int64 as decimal strings, uuid as 16 fresh bytes, text as text; undefined for `sequence`. */
export interface PkKeySource {
  /** The next key, made by simulated server `server` (0..servers-1). */
  next(server: number): string | Uint8Array | undefined;
}

export interface PkKeyOptions {
  readonly clock: Clock;
  readonly random: Random;
  /** Simulated servers issuing keys at once (segment, snowflake). */
  readonly servers: number;
  /** Segment length each simulated server takes from the shared counter. */
  readonly step: number;
}

/** Several servers' segment buffers over one in-memory store counter (max_id starts at 1). */
export class SimulatedSegmentServers {
  private maxId = 1n;
  private readonly buffers: SegmentBuffer[];
  private readonly pending: boolean[];

  constructor(
    readonly servers: number,
    readonly step: number,
    private readonly clock: Clock,
  ) {
    this.buffers = Array.from({ length: servers }, () => new SegmentBuffer());
    this.pending = Array.from({ length: servers }, () => false);
    this.buffers.forEach((b, i) => {
      b.onRefillNeeded = () => {
        this.pending[i] = true;
      };
      b.offer(this.allocate());
    });
  }

  /** One atomic `max_id = max_id + step` of the store: the range [max_id, max_id + step). */
  private allocate() {
    const start = this.maxId;
    this.maxId += BigInt(this.step);
    return { start, end: this.maxId, stride: 1, step: this.step, loadedAt: this.clock.now() };
  }

  /** The next ID of server `i`; it prefetches its next segment at 10% as Leaf's double buffer does. */
  take(i: number): bigint {
    const b = this.buffers[i]!;
    let v = b.take();
    if (v === undefined) {
      // never reached while prefetching works; kept for a buffer whose refill was not yet delivered
      b.offer(this.allocate());
      this.pending[i] = false;
      v = b.take()!;
    }
    if (this.pending[i]) {
      this.pending[i] = false;
      b.offer(this.allocate());
    }
    return BigInt(v);
  }
}

export function pkKeySource(kind: PkKind, o: PkKeyOptions): PkKeySource {
  switch (kind.name) {
    case 'sequence':
      return { next: () => undefined };
    case 'segment': {
      const s = new SimulatedSegmentServers(o.servers, o.step, o.clock);
      return { next: (server) => s.take(server % o.servers).toString() };
    }
    case 'snowflake': {
      const layout = getLayout('twitter');
      const gens = Array.from({ length: o.servers }, (_, w) => new SnowflakeGenerator({ layout, clock: o.clock, worker: { workerId: w } }));
      return {
        next: (server) => {
          const g = gens[server % o.servers]!;
          for (;;) {
            const id = g.take();
            if (typeof id === 'string') return id; // else the tick's sequence is full: the next ms is a moment away
          }
        },
      };
    }
    case 'uuidv7': {
      const g = new UuidV7Generator({ clock: o.clock, random: o.random });
      return { next: () => g.nextBytes() };
    }
    case 'uuidv4': {
      const g = new UuidV4Generator({ random: o.random });
      return { next: () => g.nextBytes() };
    }
    case 'uuidv4-text': {
      const g = new UuidV4Generator({ random: o.random });
      return { next: () => g.next() };
    }
    case 'ulid': {
      const g = new UuidV7Generator({ clock: o.clock, random: o.random });
      return { next: () => g.nextUlid() };
    }
  }
}

const PAYLOAD_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/**
 * The non-key columns of row `i`, the same for every kind (a small PRNG seeded
 * by the row number): `indexes` 31-bit integers and `width` characters of payload.
 */
export function pkRowColumns(i: number, width: number, indexes: number): { ints: number[]; payload: string } {
  let x = (Math.imul(i + 1, 0x9e3779b1) ^ 0x5bd1e995) >>> 0;
  const step = (): number => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
  const ints: number[] = [];
  for (let k = 0; k < indexes; k++) ints.push(step() & 0x7fffffff);
  let payload = '';
  for (let c = 0; c < width; c++) payload += PAYLOAD_ALPHABET[step() % PAYLOAD_ALPHABET.length];
  return { ints, payload };
}

/** The value at quantile q (0..1) of `xs`, nearest rank; 0 for none. Sorts `xs` in place. */
export function quantile(xs: Float64Array | number[], q: number): number {
  if (xs.length === 0) return 0;
  const sorted = xs instanceof Float64Array ? xs.sort() : xs.sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

/**
 * The order kinds run in, slice by slice: slice s starts at kind s mod n, so
 * each kind runs first once every n slices; the kinds after it follow forwards
 * in the first n slices, backwards in the next n, and so on, so no kind always
 * runs right after the same neighbour, and drift in the machine spreads over all.
 */
export function interleavedOrder<T>(kinds: readonly T[], slice: number): T[] {
  const n = kinds.length;
  const dir = Math.floor(slice / n) % 2 === 0 ? 1 : -1;
  return Array.from({ length: n }, (_, j) => kinds[(((slice + dir * j) % n) + n) % n]!);
}
