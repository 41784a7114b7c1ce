import type { ZodMiniType } from 'zod/mini';
import { InvalidArgumentError } from '../core/errors.js';
import { inEnglish } from './zod-english.js';

/** Validates a request body with zod; the message names every bad field. */
export function parseBody<T>(schema: ZodMiniType<T>, body: unknown): T {
  const r = schema.safeParse(body ?? {}, inEnglish);
  if (r.success) return r.data;
  const parts = r.error.issues.map((i) => `${i.path.length ? i.path.join('.') : 'body'}: ${i.message}`);
  throw new InvalidArgumentError(`invalid body: ${parts.join('; ')}`);
}
