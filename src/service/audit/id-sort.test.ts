import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { IdSorter, LineParser, type RunWriter, addDecimal, halvesToBigInt, writeSortedRun } from './id-sort.js';

function parsed(text: string, format: 'lines' | 'copy', chunk = 3): bigint[] {
  const sorter = new IdSorter({ chunkIds: 1024 });
  const p = new LineParser(sorter, 0, false, format);
  const bytes = Buffer.from(text);
  // Chunks that cut rows anywhere, as a socket delivers them.
  for (let i = 0; i < bytes.length; i += chunk) p.push(bytes.subarray(i, i + chunk));
  p.end();
  const out: bigint[] = [];
  sorter.drain((hi, lo, n) => {
    for (let k = 0; k < n; k++) out.push(halvesToBigInt(hi, lo));
  });
  return out;
}

const message = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    return (e as Error).message;
  }
  return 'no error';
};

describe("LineParser in PostgreSQL's COPY text format", () => {
  it('takes the first tab-separated column exactly, above 2^53 too', () => {
    expect(parsed('9007199254740993\tx,y\t3\n5\t\\N\n9223372036854775807\n', 'copy')).toEqual([
      5n,
      9007199254740993n,
      9223372036854775807n,
    ]);
  });

  it('a NULL, an empty value, a sign or a quote is a bad row, named by its number', () => {
    expect(message(() => parsed('1\n\\N\n', 'copy'))).toBe('row 2: not an ID from 0 to 2^63-1: NULL');
    expect(message(() => parsed('1\n\n', 'copy'))).toBe('row 2: not an ID from 0 to 2^63-1');
    expect(message(() => parsed('-1\n', 'copy'))).toBe('row 1: not an ID from 0 to 2^63-1');
    expect(message(() => parsed('"1"\n', 'copy'))).toBe('row 1: not an ID from 0 to 2^63-1');
    expect(message(() => parsed('9223372036854775808\n', 'copy'))).toBe('row 1: not an ID from 0 to 2^63-1');
  });

  it('a file keeps its rules: blank lines skipped, quotes allowed', () => {
    expect(parsed('1\n\n"2"\n', 'lines')).toEqual([1n, 2n]);
  });
});

describe('addDecimal', () => {
  it('adds 0 to 2^63-1 given as text, refuses anything else', () => {
    const sorter = new IdSorter({ chunkIds: 16 });
    for (const ok of ['0', '42', '9007199254740993', '9223372036854775807']) expect(addDecimal(sorter, ok), ok).toBe(true);
    for (const bad of ['', '-1', '1.0', ' 1', '9223372036854775808', '12345678901234567890'])
      expect(addDecimal(sorter, bad), bad).toBe(false);
    const out: bigint[] = [];
    sorter.drain((hi, lo) => out.push(halvesToBigInt(hi, lo)));
    expect(out).toEqual([0n, 42n, 9007199254740993n, 9223372036854775807n]);
  });
});

/**
 * A writer that takes each chunk away as a thread's postMessage does (the
 * sorter's view of it is detached: a write to it would be lost) and writes
 * the run only when waited on, as late as a slow thread would.
 */
class LateWriter implements RunWriter {
  held: { chunk: BigInt64Array; n: number; path: string } | undefined;
  /** Chunks given back by `wait`, and how many chunks the sorter handed over that were not one of them. */
  readonly returned = new Set<BigInt64Array>();
  fresh = 0;
  paths: string[] = [];
  failWith: string | undefined;
  start(chunk: BigInt64Array, n: number, path: string): void {
    expect(this.held).toBeUndefined();
    if (!this.returned.has(chunk)) this.fresh++;
    const moved = structuredClone(chunk, { transfer: [chunk.buffer as ArrayBuffer] });
    this.held = { chunk: moved, n, path };
    this.paths.push(path);
  }
  wait(): BigInt64Array | undefined {
    const h = this.held;
    this.held = undefined;
    if (h === undefined) return undefined;
    if (this.failWith !== undefined) throw new Error(this.failWith);
    writeSortedRun(h.chunk, h.n, h.path);
    this.returned.add(h.chunk);
    return h.chunk;
  }
}

describe('IdSorter with a RunWriter (full chunks sorted elsewhere while the next is read)', () => {
  const ids = Array.from({ length: 1000 }, (_, i) => BigInt((i * 7919) % 997) * 9007199254740993n);
  const sorted = (sorter: IdSorter): Array<[bigint, number]> => {
    for (const id of ids) sorter.add(id);
    const out: Array<[bigint, number]> = [];
    sorter.drain((hi, lo, n) => out.push([halvesToBigInt(hi, lo), n]));
    return out;
  };

  it('finds the same distinct IDs and counts, in at most two chunks, and removes its runs', () => {
    const writer = new LateWriter();
    const got = sorted(new IdSorter({ chunkIds: 64, runWriter: writer }));
    expect(got).toEqual(sorted(new IdSorter({ chunkIds: 64 })));
    expect(got.filter(([, n]) => n > 1).length).toBe(3);
    expect(writer.paths.length).toBe(Math.ceil(ids.length / 64));
    // The chunk handed over comes back and is filled again: two buffers, the one being read into and the one being written.
    expect(writer.fresh).toBe(2);
    expect(existsSync(dirname(writer.paths[0] as string))).toBe(false);
  });

  it("a run the writer could not write stops the drain with the writer's error, and the spill files go", () => {
    const writer = new LateWriter();
    const sorter = new IdSorter({ chunkIds: 64, runWriter: writer });
    for (const id of ids) sorter.add(id);
    writer.failWith = 'ENOSPC: no space left on device';
    expect(message(() => sorter.drain(() => undefined))).toBe('ENOSPC: no space left on device');
    expect(existsSync(dirname(writer.paths[0] as string))).toBe(false);
  });
});
