import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { SequoiaError } from '../core/errors.js';

/**
 * Bearer-token check. Both sides are hashed first so the comparison is
 * constant-time whatever the lengths; the token itself is never logged.
 */
export function makeTokenCheck(token: string | undefined): (req: FastifyRequest) => void {
  if (!token) return () => {};
  const expected = digest(token);
  return (req) => {
    const header = req.headers.authorization;
    if (header === undefined || header === '') {
      throw new SequoiaError('UNAUTHORIZED', 'this route needs an admin token: Authorization: Bearer <token>');
    }
    const m = /^Bearer (.+)$/i.exec(header);
    if (!m || !timingSafeEqual(digest(m[1] as string), expected)) {
      throw new SequoiaError('FORBIDDEN', 'the admin token is not valid');
    }
  };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}
