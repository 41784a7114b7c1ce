import { describe, expect, it } from 'vitest';
import { IdSorter, LineParser, addDecimal, halvesToBigInt } from './id-sort.js';

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
