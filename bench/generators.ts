/**
 * Side-by-side throughput of ID generators in one process, one run: Node's
 * crypto.randomUUID, Sequoia's UUIDv7/v4/ObjectId/order numbers, and the peer
 * packages (uuid, ulid, nanoid, bson, ksuid). Every generator produces its
 * text form (what a service would send). Rounds are interleaved (each round
 * runs every generator once) so machine noise hits all of them alike; the
 * result is the median of the rounds.
 *
 * Ad hoc: npx tsc -p tsconfig.bench.json && node dist-bench-tmp/bench/generators.js [rounds] [durationMs]
 */
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ObjectId } from 'bson';
import KSUID from 'ksuid';
import { nanoid } from 'nanoid';
import { ulid } from 'ulid';
import * as uuid from 'uuid';
import { createBusinessNumberCodec } from '../src/core/business-number/business-number.js';
import { ObjectIdGenerator } from '../src/core/objectid/object-id.js';
import { UuidV4Generator } from '../src/core/uuid/uuid-v4.js';
import { UuidV7Generator } from '../src/core/uuid/uuid-v7.js';
import { systemClock } from '../src/core/clock.js';
import { systemRandom } from '../src/core/random.js';

interface Candidate {
  name: string;
  make: () => () => string;
}

function candidates(): Candidate[] {
  return [
    { name: 'crypto.randomUUID', make: () => () => randomUUID() },
    {
      name: 'sequoia uuidv7',
      make: () => {
        const g = new UuidV7Generator({ clock: systemClock, random: systemRandom });
        return () => g.next();
      },
    },
    {
      name: 'sequoia uuidv4',
      make: () => {
        const g = new UuidV4Generator({ random: systemRandom });
        return () => g.next();
      },
    },
    { name: 'uuid v4', make: () => () => uuid.v4() },
    { name: 'uuid v7', make: () => () => uuid.v7() },
    { name: 'ulid', make: () => () => ulid() },
    { name: 'nanoid', make: () => () => nanoid() },
    { name: 'bson ObjectId', make: () => () => new ObjectId().toHexString() },
    { name: 'ksuid', make: () => () => KSUID.randomSync().string },
    {
      name: 'sequoia objectid',
      make: () => {
        const g = new ObjectIdGenerator({ clock: systemClock, random: systemRandom });
        return () => g.next();
      },
    },
    {
      name: 'sequoia permutation+crockford32',
      make: () => {
        const codec = createBusinessNumberCodec({
          kind: 'permuted-base32',
          bits: 60,
          key: 'bench-key-not-a-secret-0123456789',
          width: 12,
          check: true,
        });
        let id = 1_000_000;
        return () => codec.encode(id++);
      },
    },
  ];
}

/** Sink so the engine cannot drop the work. */
let sink = 0;

function measure(fn: () => string, durationMs: number): number {
  const batch = 1000;
  let n = 0;
  const start = performance.now();
  let now: number;
  do {
    for (let i = 0; i < batch; i++) sink += fn().length;
    n += batch;
    now = performance.now();
  } while (now - start < durationMs);
  return (n / (now - start)) * 1000;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Each generator is timed in a process of its own (one per round): in one
 * shared loop the call `fn()` sees a dozen generators, V8 stops inlining it,
 * and the fast ones are measured mostly as call overhead. Alone, each runs as
 * its users' code would.
 */
function measureInChild(index: number, durationMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [fileURLToPath(import.meta.url), '--one', String(index), String(durationMs)],
      { encoding: 'utf8' },
      (err, out) => {
        if (err) reject(err);
        else resolve(Number(out.trim().split('\n').pop()));
      },
    );
  });
}

export async function benchGenerators(opts: { rounds: number; durationMs: number }): Promise<Array<{ name: string; idsPerSec: number }>> {
  const rounds = Math.max(1, Math.floor(opts.rounds));
  const durationMs = Math.max(10, opts.durationMs);
  const list = candidates().map((c) => ({ name: c.name, samples: [] as number[] }));
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < list.length; i++) list[i]!.samples.push(await measureInChild(i, durationMs));
  }
  return list.map((c) => ({ name: c.name, idsPerSec: Math.round(median(c.samples)) }));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === '--one') {
  const c = candidates()[Number(process.argv[3])];
  if (!c) throw new Error('no such candidate');
  const fn = c.make();
  const durationMs = Number(process.argv[4] ?? 400);
  measure(fn, Math.min(200, durationMs)); // warm-up (JIT)
  const rate = measure(fn, durationMs);
  if (sink < 0) console.log(sink);
  console.log(String(rate));
} else if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rounds = Number(process.argv[2] ?? 5);
  const durationMs = Number(process.argv[3] ?? 500);
  const results = await benchGenerators({ rounds, durationMs });
  const base = results.find((r) => r.name === 'crypto.randomUUID')?.idsPerSec ?? 1;
  for (const r of results) {
    console.log(`${r.name.padEnd(34)} ${(r.idsPerSec / 1e6).toFixed(2).padStart(7)} M/s  ${(r.idsPerSec / base).toFixed(2)}× randomUUID`);
  }
}
