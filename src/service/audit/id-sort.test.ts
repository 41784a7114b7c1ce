import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdSorter, LineParser, addDecimal, halvesToBigInt } from './id-sort.js';

function parsed(text: string, format: 'lines' | 'copy', chunk = 3, column = 0, header = false): bigint[] {
  const sorter = new IdSorter({ chunkIds: 1024 });
  const p = new LineParser(sorter, column, header, format);
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

/**
 * The parser's rules said line by line with strings and BigInt, as a reader
 * states them: the model the byte parser must agree with, IDs or the error.
 */
function model(text: string, format: 'lines' | 'copy', column: number, header: boolean): bigint[] {
  const copy = format === 'copy';
  const lines = text.split('\n');
  const out: bigint[] = [];
  lines.forEach((line, i) => {
    const ended = i < lines.length - 1;
    if (header && i === 0) return;
    const field = line.split(copy ? '\t' : ',')[column] ?? '';
    const m = (copy ? /^[ \r]*(\d+)[ \r]*$/ : /^[ \t\r"]*(\d+)[ \t\r"]*$/).exec(field);
    const nonblank = (copy ? /[^ \r]/ : /[^ \t\r]/).test(line);
    const blank = !/\d/.test(field) && !/[^ \t\r"]/.test(field) && !(copy && ended) && !nonblank;
    if (blank) return;
    const value = m ? BigInt(m[1] as string) : undefined;
    if (value === undefined || value > 9223372036854775807n) {
      if (copy) throw new Error(`row ${i + 1}: not an ID from 0 to 2^63-1${field.includes('\\') ? ': NULL' : ''}`);
      throw new Error(`line ${i + 1}: not an ID from 0 to 2^63-1${column > 0 ? ` in column ${column + 1}` : ''}`);
    }
    out.push(value);
  });
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

const outcome = (f: () => bigint[]): string => {
  try {
    return f().join(' ');
  } catch (e) {
    return (e as Error).message;
  }
};

describe('LineParser against the line-by-line model', () => {
  // Digit runs of 1 to 21 (across the 15 digits a double holds exactly, and past 2^63) among every byte with a rule.
  const token = fc.oneof(
    { weight: 4, arbitrary: fc.stringMatching(/^[0-9]{1,21}$/) },
    { weight: 3, arbitrary: fc.constantFrom('\n', '9223372036854775807', '9223372036854775808', '000000000000000000001') },
    { weight: 3, arbitrary: fc.constantFrom(' ', '\t', ',', '\r', '"', '\\N', '-', 'x') },
  );
  it('agrees on every input, however it is cut into chunks', () => {
    fc.assert(
      fc.property(
        fc.array(token, { maxLength: 40 }),
        fc.constantFrom<'lines' | 'copy'>('lines', 'copy'),
        fc.integer({ min: 0, max: 2 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 64 }),
        (tokens, format, column, header, chunk) => {
          const text = tokens.join('');
          expect(outcome(() => parsed(text, format, chunk, column, header))).toBe(outcome(() => model(text, format, column, header)));
        },
      ),
      { numRuns: 3000 },
    );
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
