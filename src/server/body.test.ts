import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { parseBody } from './body.js';

describe('parseBody', () => {
  const schema = z.strictObject({ tag: z.string(), step: z.optional(z.number().check(z.int(), z.minimum(1))) });

  it('answers the parsed body', () => {
    expect(parseBody(schema, { tag: 'order', step: 5 })).toEqual({ tag: 'order', step: 5 });
  });

  it("names every bad field with zod's English message (zod/mini loads no locale of its own)", () => {
    expect(() => parseBody(schema, { tag: 5, step: 0.5, extra: true })).toThrow(
      'invalid body: tag: Invalid input: expected string, received number; step: Invalid input: expected int, received number; ' +
        'body: Unrecognized key: "extra"',
    );
    expect(() => parseBody(schema, undefined)).toThrow('invalid body: tag: Invalid input: expected string, received undefined');
  });
});
