import { describe, expect, it } from 'vitest';
import { errorEnvelope, retryAfterSeconds } from './raw-answer.js';

describe('the error envelope (one shape for fastify and the answers below it)', () => {
  it('JSON by default, Leaf text under Leaf paths', () => {
    expect(errorEnvelope('RATE_LIMITED', 'slow down', false)).toEqual({
      type: 'application/json; charset=utf-8',
      text: '{"error":{"code":"RATE_LIMITED","message":"slow down"}}',
    });
    expect(errorEnvelope('TAG_NOT_FOUND', 'no tag "x"', true)).toEqual({
      type: 'text/plain; charset=utf-8',
      text: 'TAG_NOT_FOUND: no tag "x"',
    });
  });

  it('Retry-After: whole seconds, at least 1, on every 429 and 503 and when the error says when', () => {
    expect(retryAfterSeconds(503, undefined)).toBe(1);
    expect(retryAfterSeconds(429, 2500)).toBe(3);
    expect(retryAfterSeconds(400, 10)).toBe(1);
    expect(retryAfterSeconds(400, undefined)).toBeUndefined();
    expect(retryAfterSeconds(500, undefined)).toBeUndefined();
  });
});
