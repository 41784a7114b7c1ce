/**
 * Snowflake generators side by side, in one process and one run: Sequoia's
 * generator under the twitter, leaf, sonyflake and a 22-bit-sequence layout,
 * and the peer packages (@sapphire/snowflake, nodejs-snowflake, flake-idgen,
 * snowflake-id, sonyflake, simpleflakes). Each produces its decimal text (what
 * a service sends). Rounds are interleaved; figures are medians.
 *
 * Per generator: IDs/s; for 12-bit-sequence layouts the ratio to the layout cap
 * of 4,096 IDs per ms per worker (10-ms sonyflake: 256 per 10 ms); and repeats
 * in one burst of `burst` IDs taken as fast as possible. A generator that
 * repeats is reported with its repeats and is not a speed anchor.
 *
 * Ad hoc: npx tsc -p tsconfig.bench.json --outDir dist-bench-tmp && node dist-bench-tmp/bench/snowflake.js
 */
import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Snowflake as SapphireSnowflake } from '@sapphire/snowflake';
import FlakeId from 'flake-idgen';
import NodejsSnowflake from 'nodejs-snowflake';
import SnowflakeIdPkg from 'snowflake-id';
import { Sonyflake } from 'sonyflake';
import simpleflakes from 'simpleflakes';
import { SnowflakeGenerator } from '../src/core/snowflake/generator.js';
import { TWITTER_EPOCH_MS, type Layout, defineLayout, getLayout } from '../src/core/snowflake/layout.js';
import { systemClock } from '../src/core/clock.js';
import { systemRandom } from '../src/core/random.js';
import { median } from './util.js';

export interface SnowflakeBenchOptions {
  /** Interleaved rounds. Default 5. */
  readonly rounds?: number;
  /** Length of one timed run per generator, ms. Default 500. */
  readonly durationMs?: number;
  /** IDs in the repeat-count burst. Default 200,000. */
  readonly burst?: number;
}

export interface SnowflakeBenchRow {
  readonly name: string;
  readonly idsPerSecond: number;
  /** The layout's cap in IDs/s for one worker, when the generator can reach it. */
  readonly capPerSecond: number | undefined;
  /** idsPerSecond / capPerSecond. */
  readonly ratioToCap: number | undefined;
  readonly burst: number;
  /** IDs in the burst equal to an earlier one. */
  readonly repeats: number;
  /** Calls that threw instead of answering (flake-idgen refuses when its sequence runs out). */
  readonly refusals: number;
  readonly note: string;
}

interface Candidate {
  readonly name: string;
  readonly capPerSecond: number | undefined;
  readonly note: string;
  /** One ID as text; throws when the generator refuses. */
  readonly next: () => string;
}

const SEQ22 = defineLayout({
  name: 'seq22',
  version: 1,
  description: 'bench: 41 bits of ms, 22-bit sequence, no worker bits',
  epochMs: TWITTER_EPOCH_MS,
  unitMs: 1,
  timeBits: 41,
  fields: [{ name: 'sequence', bits: 22, role: 'sequence' }],
});

/** Sequoia's generator with the service's wait: spin to the next tick when the sequence runs out. */
function sequoia(layout: Layout, name: string): Candidate {
  const g = new SnowflakeGenerator({ layout, clock: systemClock, random: systemRandom, worker: { workerId: 1 % 2 ** layout.workerBits } });
  const next = (): string => {
    for (;;) {
      const id = g.take();
      if (typeof id === 'string') return id;
      const last = g.lastIssuedTick;
      while (g.currentTick() <= last) {
        /* spin to the next tick, as the service does for waits of ≤ 2 ms */
      }
    }
  };
  const cap = (2 ** layout.sequenceBits * 1000) / layout.unitMs;
  return { name, capPerSecond: cap, note: layout.sequenceBits >= 22 ? 'not capped at this rate' : '', next };
}

function candidates(): Candidate[] {
  const sapphire = new SapphireSnowflake(BigInt(TWITTER_EPOCH_MS));
  const nodejs = new NodejsSnowflake.Snowflake({ custom_epoch: TWITTER_EPOCH_MS, instance_id: 1 });
  const flake = new FlakeId({ id: 1, epoch: TWITTER_EPOCH_MS });
  const SnowflakeId = ((SnowflakeIdPkg as unknown as { default?: unknown }).default ?? SnowflakeIdPkg) as new (o: object) => {
    generate(): string;
  };
  const sid = new SnowflakeId({ mid: 1, offset: 0 });
  const sony = new Sonyflake({ machineId: 1 });
  const simple = (simpleflakes as unknown as { simpleflake: () => bigint }).simpleflake;
  return [
    sequoia(getLayout('twitter'), 'Sequoia twitter (41/5/5/12)'),
    sequoia(getLayout('leaf'), 'Sequoia leaf (41/10/12)'),
    sequoia(getLayout('sonyflake'), 'Sequoia sonyflake (39×10ms/8/16)'),
    sequoia(SEQ22, 'Sequoia 41/22-bit sequence'),
    {
      name: '@sapphire/snowflake',
      capPerSecond: 4_096_000,
      note: 'increment wraps without waiting for the next ms',
      next: () => sapphire.generate().toString(),
    },
    { name: 'nodejs-snowflake', capPerSecond: 4_096_000, note: '', next: () => nodejs.getUniqueID().toString() },
    {
      name: 'flake-idgen',
      capPerSecond: 4_096_000,
      note: 'throws when its sequence runs out',
      next: () => (flake.next() as Buffer).toString('hex'),
    },
    { name: 'snowflake-id', capPerSecond: 4_096_000, note: '', next: () => sid.generate() },
    { name: 'sonyflake (package)', capPerSecond: 25_600, note: '', next: () => String(sony.nextId()) },
    { name: 'simpleflakes', capPerSecond: undefined, note: 'random low bits: collisions by chance', next: () => simple().toString() },
  ];
}

function timed(c: Candidate, ms: number): { rate: number; refusals: number } {
  let n = 0;
  let refusals = 0;
  let sink = 0;
  const end = performance.now() + ms;
  const t0 = performance.now();
  while (performance.now() < end) {
    for (let i = 0; i < 256; i++) {
      try {
        sink += c.next().length;
        n++;
      } catch {
        refusals++;
      }
    }
  }
  const t = performance.now() - t0;
  if (sink < 0) console.log(sink);
  return { rate: (n / t) * 1000, refusals };
}

function repeats(c: Candidate, burst: number): { repeats: number; refusals: number } {
  const seen = new Set<string>();
  let dup = 0;
  let refusals = 0;
  for (let i = 0; i < burst; i++) {
    let id: string;
    try {
      id = c.next();
    } catch {
      refusals++;
      continue;
    }
    if (seen.has(id)) dup++;
    else seen.add(id);
  }
  return { repeats: dup, refusals };
}

export async function benchSnowflake(opts: SnowflakeBenchOptions = {}): Promise<SnowflakeBenchRow[]> {
  const rounds = opts.rounds ?? 5;
  const ms = opts.durationMs ?? 500;
  const burst = opts.burst ?? 200_000;
  const cs = candidates();
  const rates = cs.map(() => [] as number[]);
  const refused = cs.map(() => 0);
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < cs.length; i++) {
      const t = await timedInChild(i, ms);
      rates[i]?.push(t.rate);
      refused[i] = (refused[i] ?? 0) + t.refusals;
    }
  }
  return cs.map((c, i) => {
    const rate = median(rates[i] ?? [0]);
    const rep = repeats(c, burst);
    return {
      name: c.name,
      idsPerSecond: rate,
      capPerSecond: c.capPerSecond,
      ratioToCap: c.capPerSecond ? rate / c.capPerSecond : undefined,
      burst,
      repeats: rep.repeats,
      refusals: rep.refusals + (refused[i] ?? 0),
      note: c.note,
    };
  });
}

/**
 * Each candidate is timed in a process of its own: in one shared loop the
 * call `c.next()` sees ten generators, V8 stops inlining it, and every
 * generator is measured mostly as call overhead. Alone, each runs as its
 * users' code would.
 */
function timedInChild(index: number, ms: number): Promise<{ rate: number; refusals: number }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [fileURLToPath(import.meta.url), '--one', String(index), String(ms)], { encoding: 'utf8' }, (err, out) => {
      if (err) reject(err);
      else resolve(JSON.parse(out.trim().split('\n').pop() ?? '{}') as { rate: number; refusals: number });
    });
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href && process.argv[2] === '--one') {
  const c = candidates()[Number(process.argv[3])];
  if (!c) throw new Error('no such candidate');
  timed(c, 100); // warm-up
  console.log(JSON.stringify(timed(c, Number(process.argv[4] ?? 500))));
} else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await benchSnowflake({ rounds: Number(process.argv[2] ?? 5), durationMs: Number(process.argv[3] ?? 500) });
  console.log('| generator | IDs/s | vs layout cap | repeats in burst | refusals | note |');
  console.log('| --- | ---: | ---: | ---: | ---: | --- |');
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${(r.idsPerSecond / 1e6).toFixed(2)} M | ${r.ratioToCap === undefined ? '–' : `${(r.ratioToCap * 100).toFixed(0)}%`} | ${r.repeats} / ${r.burst} | ${r.refusals} | ${r.note} |`,
    );
  }
}
