/**
 * The one table of error codes: every code is rebuilt (the client) as the
 * class it is raised as (the core, service and server), with its message and
 * retry delay; the CLI's exit status comes from the same row.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ClockError,
  ERROR_CODES,
  ERRORS,
  InvalidArgumentError,
  SequoiaError,
  TagExistsError,
  TagNotFoundError,
  UnavailableError,
  type ErrorClass,
  errorClassOf,
  errorFromCode,
  exitStatusFor,
} from './errors.js';

const SRC = fileURLToPath(new URL('..', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : [];
  });
}

describe('the error table', () => {
  /** The class users catch for each code (what the table's rows must say). */
  const EXPECTED: Record<(typeof ERROR_CODES)[number], ErrorClass> = {
    INVALID_ARGUMENT: InvalidArgumentError,
    UNAUTHORIZED: SequoiaError,
    FORBIDDEN: SequoiaError,
    TAG_NOT_FOUND: TagNotFoundError,
    NOT_FOUND: SequoiaError,
    METHOD_NOT_ALLOWED: SequoiaError,
    TAG_EXISTS: TagExistsError,
    RATE_LIMITED: SequoiaError,
    SEGMENTS_EXHAUSTED: UnavailableError,
    STORE_UNAVAILABLE: UnavailableError,
    STORE_ROLLBACK_DETECTED: UnavailableError,
    CLOCK_MOVED_BACKWARDS: ClockError,
    LEASE_LOST: UnavailableError,
    ID_SPACE_EXHAUSTED: UnavailableError,
    SHUTTING_DOWN: UnavailableError,
    RESERVE_EXHAUSTED: UnavailableError,
    INTERNAL: SequoiaError,
  };

  it.each(ERROR_CODES.map((c) => [c]))('%s comes back from its code as its own class, with message and retry delay', (code) => {
    const e = errorFromCode(code, `a message for ${code}`, 3000);
    expect(errorClassOf(code)).toBe(EXPECTED[code]);
    expect(Object.getPrototypeOf(e)).toBe(EXPECTED[code].prototype);
    expect(e.code).toBe(code);
    expect(e.message).toBe(`a message for ${code}`);
    if (e instanceof InvalidArgumentError || e instanceof TagNotFoundError || e instanceof TagExistsError)
      expect(e.retryAfterMs).toBeUndefined();
    else expect(e.retryAfterMs).toBe(3000);
  });

  it('names the classes users test with instanceof', () => {
    expect(errorFromCode('TAG_NOT_FOUND', 'tag "x" does not exist')).toBeInstanceOf(TagNotFoundError);
    expect(errorFromCode('TAG_EXISTS', 'tag "x" already exists')).toBeInstanceOf(TagExistsError);
    expect(errorFromCode('INVALID_ARGUMENT', 'bad')).toBeInstanceOf(InvalidArgumentError);
    expect(errorFromCode('CLOCK_MOVED_BACKWARDS', 'behind')).toBeInstanceOf(ClockError);
    for (const c of [
      'SEGMENTS_EXHAUSTED',
      'STORE_UNAVAILABLE',
      'STORE_ROLLBACK_DETECTED',
      'LEASE_LOST',
      'ID_SPACE_EXHAUSTED',
      'SHUTTING_DOWN',
      'RESERVE_EXHAUSTED',
    ]) {
      expect(errorFromCode(c, 'm')).toBeInstanceOf(UnavailableError);
    }
    const unknown = errorFromCode('NO_SUCH_CODE', 'm');
    expect(unknown.code).toBe('INTERNAL');
    expect(Object.getPrototypeOf(unknown)).toBe(SequoiaError.prototype);
  });

  it('gives the CLI exit status of the row: 2 for input the caller must change, 1 otherwise', () => {
    for (const c of ERROR_CODES) expect(exitStatusFor(errorFromCode(c, 'm'))).toBe(ERRORS[c].exit);
    expect(ERROR_CODES.filter((c) => ERRORS[c].exit === 2)).toEqual(['INVALID_ARGUMENT', 'TAG_NOT_FOUND', 'TAG_EXISTS']);
    expect(exitStatusFor(new Error('not ours'))).toBe(1);
  });

  it('every code raised in src/ is raised as the class its row names (so the client rebuilds what was thrown)', () => {
    const raised: string[] = [];
    const wrong: string[] = [];
    const classes: Record<string, unknown> = { SequoiaError, UnavailableError };
    for (const file of sourceFiles(SRC)) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/new (SequoiaError|UnavailableError)\(\s*'([A-Z_]+)'/g)) {
        const [, cls, code] = m as unknown as [string, string, keyof typeof ERRORS];
        raised.push(code);
        if (!(code in ERRORS) || errorClassOf(code) !== classes[cls]) wrong.push(`${file.slice(SRC.length)}: new ${cls}('${code}')`);
      }
    }
    expect(raised.length).toBeGreaterThan(20);
    expect(wrong).toEqual([]);
  });
});
