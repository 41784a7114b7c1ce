/**
 * The JSON body parser: fastify's default answers a body with a `__proto__`
 * or `constructor.prototype` key with "Body is not valid JSON", which hides
 * what was refused. This one says which key was refused and why, and keeps
 * refusing it (tag names such as `__proto__` are values, never keys).
 */
import type { FastifyRequest } from 'fastify';
import { InvalidArgumentError } from '../core/errors.js';

/** A key path that could change an object's prototype if the body were merged into an object, or undefined. */
export function poisonedKey(value: unknown, path = 'body'): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key];
    if (key === '__proto__') return `${path}.__proto__`;
    if (key === 'constructor' && v !== null && typeof v === 'object' && Object.hasOwn(v, 'prototype'))
      return `${path}.constructor.prototype`;
    const inner = poisonedKey(v, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`);
    if (inner !== undefined) return inner;
  }
  return undefined;
}

export function parseJsonBody(_req: FastifyRequest, body: string, done: (err: Error | null, value?: unknown) => void): void {
  if (body.length === 0) return done(new InvalidArgumentError('the body must not be empty when content-type is application/json'));
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return done(new InvalidArgumentError('the body is not valid JSON (content-type is application/json)'));
  }
  const key = poisonedKey(value);
  if (key !== undefined) {
    return done(
      new InvalidArgumentError(
        `the body has the key ${key.slice('body.'.length)}: refused, because such a key can change object prototypes (a tag named __proto__ is fine as a value: {"tag":"__proto__"})`,
      ),
    );
  }
  done(null, value);
}
