/**
 * Bounded-memory sorting of 63-bit IDs for `sequoia audit`: IDs arrive as
 * decimal text, are parsed straight into a BigInt64Array (no BigInt per ID:
 * each value is built as two 32-bit halves), sorted in place by V8's native
 * typed-array sort, and spilled as sorted binary runs to a temp directory
 * when the chunk is full. `drain` then merges the runs (k-way) and calls back
 * once per distinct value with how many times it occurred.
 *
 * Memory: one chunk (`chunkIds` × 8 bytes) while reading, plus a read
 * buffer per run while merging; never the whole input.
 */
import { mkdtempSync, openSync, readSync, closeSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '../../core/errors.js';

const TWO32 = 4294967296;
/** Digits whose value a double holds exactly (10^15 < 2^53). */
const EXACT_DIGITS = 15;

/** Called per distinct value in increasing order: the value's high and low 32 bits (hi < 2^31) and its count. */
export type DistinctSink = (hi: number, lo: number, count: number) => void;

export interface IdSorterOptions {
  /** IDs held in memory before a run is spilled. Default 4,194,304 (32 MiB). */
  readonly chunkIds?: number | undefined;
  /** Where the spill directory is made. Default os.tmpdir(). */
  readonly tmpDir?: string | undefined;
}

export class IdSorter {
  private readonly chunkIds: number;
  private readonly tmpBase: string;
  private buf: BigInt64Array;
  private halves: Uint32Array;
  private n = 0;
  private dir: string | undefined;
  private readonly runs: Array<{ path: string; length: number }> = [];
  /** IDs added so far. */
  total = 0;

  constructor(opts: IdSorterOptions = {}) {
    this.chunkIds = Math.max(16, opts.chunkIds ?? 4 * 1024 * 1024);
    this.tmpBase = opts.tmpDir ?? tmpdir();
    this.buf = new BigInt64Array(this.chunkIds);
    this.halves = new Uint32Array(this.buf.buffer);
  }

  /** Spill runs written so far. */
  get runCount(): number {
    return this.runs.length;
  }

  /** Adds one ID given as its two halves (the caller checked hi < 2^31). */
  addHalves(hi: number, lo: number): void {
    if (this.n === this.chunkIds) this.spill();
    // Little-endian: the low word first.
    this.halves[2 * this.n] = lo;
    this.halves[2 * this.n + 1] = hi;
    this.n++;
    this.total++;
  }

  add(id: bigint): void {
    if (id < 0n || id > 0x7fffffffffffffffn) throw new InvalidArgumentError(`ID ${id} is outside 0..2^63-1`);
    this.addHalves(Number(id >> 32n), Number(id & 0xffffffffn));
  }

  private spill(): void {
    const view = this.buf.subarray(0, this.n);
    view.sort();
    this.dir ??= mkdtempSync(join(this.tmpBase, 'sequoia-audit-'));
    const path = join(this.dir, `run-${this.runs.length}.bin`);
    const fd = openSync(path, 'w');
    try {
      const bytes = new Uint8Array(this.buf.buffer, 0, this.n * 8);
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    } finally {
      closeSync(fd);
    }
    this.runs.push({ path, length: this.n });
    this.n = 0;
  }

  /** Merges everything added, in increasing order, then removes the spill files. */
  drain(sink: DistinctSink): void {
    try {
      if (this.runs.length === 0) {
        const view = this.buf.subarray(0, this.n);
        view.sort();
        emitSorted([new ArrayRun(this.halves, this.n)], sink);
        return;
      }
      if (this.n > 0) this.spill();
      // The chunk's memory is not needed while merging.
      this.buf = new BigInt64Array(0);
      this.halves = new Uint32Array(0);
      const perRun = Math.max(1024, Math.floor(this.chunkIds / Math.max(1, this.runs.length)));
      const readers = this.runs.map((r) => new FileRun(r.path, r.length, Math.min(perRun, 1 << 17)));
      try {
        emitSorted(readers, sink);
      } finally {
        for (const r of readers) r.close();
      }
    } finally {
      this.cleanup();
    }
  }

  cleanup(): void {
    if (this.dir !== undefined) rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }
}

interface Run {
  /** Current head, or done. */
  done: boolean;
  hi: number;
  lo: number;
  advance(): void;
}

class ArrayRun implements Run {
  done = false;
  hi = 0;
  lo = 0;
  private i = -1;
  constructor(
    private readonly h: Uint32Array,
    private readonly n: number,
  ) {
    this.advance();
  }
  advance(): void {
    this.i++;
    if (this.i >= this.n) {
      this.done = true;
      return;
    }
    this.lo = this.h[2 * this.i] as number;
    this.hi = this.h[2 * this.i + 1] as number;
  }
}

class FileRun implements Run {
  done = false;
  hi = 0;
  lo = 0;
  private readonly fd: number;
  private readonly h: Uint32Array;
  private readonly bytes: Uint8Array;
  private inBuf = 0;
  private i = 0;
  private left: number;
  constructor(path: string, length: number, bufIds: number) {
    this.fd = openSync(path, 'r');
    this.left = length;
    this.h = new Uint32Array(bufIds * 2);
    this.bytes = new Uint8Array(this.h.buffer);
    this.advance();
  }
  private fill(): void {
    const want = Math.min(this.left, this.h.length / 2) * 8;
    let got = 0;
    while (got < want) {
      const r = readSync(this.fd, this.bytes, got, want - got, null);
      if (r === 0) break;
      got += r;
    }
    this.inBuf = got / 8;
    this.left -= this.inBuf;
    this.i = 0;
  }
  advance(): void {
    if (this.i >= this.inBuf) {
      if (this.left === 0) {
        this.done = true;
        return;
      }
      this.fill();
      if (this.inBuf === 0) {
        this.done = true;
        return;
      }
    }
    this.lo = this.h[2 * this.i] as number;
    this.hi = this.h[2 * this.i + 1] as number;
    this.i++;
  }
  close(): void {
    closeSync(this.fd);
  }
}

/** k-way merge (linear scan of the heads: k is small) calling `sink` once per distinct value. */
function emitSorted(runs: Run[], sink: DistinctSink): void {
  const live = runs.filter((r) => !r.done);
  let curHi = -1;
  let curLo = 0;
  let count = 0;
  while (live.length > 0) {
    let best = 0;
    let bh = (live[0] as Run).hi;
    let bl = (live[0] as Run).lo;
    for (let j = 1; j < live.length; j++) {
      const r = live[j] as Run;
      if (r.hi < bh || (r.hi === bh && r.lo < bl)) {
        best = j;
        bh = r.hi;
        bl = r.lo;
      }
    }
    if (bh === curHi && bl === curLo) count++;
    else {
      if (count > 0) sink(curHi, curLo, count);
      curHi = bh;
      curLo = bl;
      count = 1;
    }
    const r = live[best] as Run;
    r.advance();
    if (r.done) live.splice(best, 1);
  }
  if (count > 0) sink(curHi, curLo, count);
}

export const halvesToBigInt = (hi: number, lo: number): bigint => (BigInt(hi) << 32n) | BigInt(lo);

/**
 * How the text is laid out: `lines` is a file (one ID a line, or a CSV column
 * with optional double quotes); `copy` is PostgreSQL's COPY text format (one
 * row a line, columns separated by tabs, NULL written `\N`), whose errors
 * name the row.
 */
export type TextFormat = 'lines' | 'copy';

/**
 * Parses decimal lines from byte chunks into the sorter. A line is trimmed
 * of spaces, tabs and a trailing CR; blank lines are skipped. `column`
 * (0-based) picks a comma-separated field; the first line may be a header
 * (`header` true: skipped). Bad input throws INVALID_ARGUMENT naming the line.
 * In the `copy` format a tab separates the fields and is not a space, and
 * a backslash in the field is a NULL (an integer column escapes nothing else).
 */
export class LineParser {
  private line = 1;
  private field = 0;
  /** The ID while it has at most EXACT_DIGITS digits; then hi and lo take over. */
  private acc = 0;
  private hi = 0;
  private lo = 0;
  private digits = 0;
  private bad = false;
  private other = false;
  private isNull = false;
  /** Anything but spaces on the line: a line with something but no ID in the column is bad, a blank line is skipped. */
  private nonblank = false;
  private skipLine: boolean;
  private readonly sep: number;
  private readonly copy: boolean;
  constructor(
    private readonly sorter: IdSorter,
    private readonly column = 0,
    header = false,
    format: TextFormat = 'lines',
  ) {
    this.skipLine = header;
    this.copy = format === 'copy';
    this.sep = this.copy ? 9 /* tab */ : 44; /* , */
  }

  /**
   * The state lives in locals while a chunk is read and in fields between
   * chunks (a line may be cut anywhere). The first 15 digits, exact in a
   * double, add up in one multiply-add each; from the 16th on, in 32-bit
   * halves with a carry. A clean line ends without a call.
   */
  push(chunk: Uint8Array): void {
    const col = this.column;
    const sep = this.sep;
    const copy = this.copy;
    const sorter = this.sorter;
    let { field, acc, hi, lo, digits, bad, other, isNull, nonblank, skipLine } = this;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i] as number;
      const d = c - 48;
      if (d >= 0 && d <= 9 && field === col && !skipLine) {
        if (other) bad = true;
        nonblank = true;
        if (digits < EXACT_DIGITS) acc = acc * 10 + d;
        else {
          if (digits === EXACT_DIGITS) {
            hi = Math.floor(acc / TWO32);
            lo = acc - hi * TWO32;
          }
          lo = lo * 10 + d;
          const carry = Math.floor(lo / TWO32);
          lo -= carry * TWO32;
          hi = hi * 10 + carry;
          if (hi >= 2147483648) bad = true;
        }
        digits++;
        continue;
      }
      if (c === 10) {
        if (digits > 0 && digits <= EXACT_DIGITS) {
          hi = Math.floor(acc / TWO32);
          lo = acc - hi * TWO32;
        }
        if (digits > 0 && !bad && !skipLine) {
          sorter.addHalves(hi, lo);
          this.line++;
        } else {
          Object.assign(this, { field, hi, lo, digits, bad, other, isNull, nonblank, skipLine });
          this.endLine(true);
          skipLine = false;
        }
        field = 0;
        acc = 0;
        hi = 0;
        lo = 0;
        digits = 0;
        bad = false;
        other = false;
        isNull = false;
        nonblank = false;
        continue;
      }
      if (skipLine) continue;
      if (c === sep) {
        nonblank = true;
        field++;
        continue;
      }
      if (c !== 32 && c !== 9 && c !== 13) nonblank = true;
      if (field !== col) continue;
      if (c === 32 || c === 9 || c === 13 || (c === 34 /* " */ && !copy)) {
        if (digits > 0) other = true;
      } else {
        if (c === 92 /* \ */ && copy) isNull = true;
        bad = true;
      }
    }
    Object.assign(this, { field, acc, hi, lo, digits, bad, other, isNull, nonblank, skipLine });
  }

  /** Ends the input (a last line without a newline counts). */
  end(): void {
    if (this.digits > 0 && this.digits <= EXACT_DIGITS) {
      this.hi = Math.floor(this.acc / TWO32);
      this.lo = this.acc - this.hi * TWO32;
    }
    this.endLine(false);
  }

  /** `ended`: by a newline. Every such row of a COPY is a row (an empty text value is one), a blank line of a file is not. */
  private endLine(ended: boolean): void {
    if (this.skipLine) this.skipLine = false;
    else if (this.bad || (this.digits === 0 && (this.nonblank || (ended && this.copy)))) {
      if (this.copy) throw new InvalidArgumentError(`row ${this.line}: not an ID from 0 to 2^63-1${this.isNull ? ': NULL' : ''}`);
      throw new InvalidArgumentError(
        `line ${this.line}: not an ID from 0 to 2^63-1${this.column > 0 ? ` in column ${this.column + 1}` : ''}`,
      );
    } else if (this.digits > 0) this.sorter.addHalves(this.hi, this.lo);
    this.line++;
    this.field = 0;
    this.acc = 0;
    this.hi = 0;
    this.lo = 0;
    this.digits = 0;
    this.bad = false;
    this.other = false;
    this.isNull = false;
    this.nonblank = false;
  }
}

/**
 * Adds one ID given as decimal text (a driver's value) without a BigInt:
 * false when it is not 1 to 19 digits from 0 to 2^63-1.
 */
export function addDecimal(sorter: IdSorter, text: string): boolean {
  const n = text.length;
  if (n === 0 || n > 19) return false;
  let hi = 0;
  let lo = 0;
  for (let i = 0; i < n; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    lo = lo * 10 + d;
    const carry = Math.floor(lo / TWO32);
    lo -= carry * TWO32;
    hi = hi * 10 + carry;
  }
  if (hi >= 2147483648) return false;
  sorter.addHalves(hi, lo);
  return true;
}
