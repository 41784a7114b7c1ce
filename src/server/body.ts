import type { z } from 'zod';
import { InvalidArgumentError } from '../core/errors.js';

/** Validates a request body with zod; the message names every bad field. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body ?? {});
  if (r.success) return r.data;
  const parts = r.error.issues.map((i) => `${i.path.length ? i.path.join('.') : 'body'}: ${i.message}`);
  throw new InvalidArgumentError(`invalid body: ${parts.join('; ')}`);
}
