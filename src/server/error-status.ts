/** The design's code-to-status table, in one place. */
import type { ErrorCode } from '../core/errors.js';

export const ERROR_STATUS: Record<ErrorCode, number> = {
  INVALID_ARGUMENT: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  TAG_NOT_FOUND: 404,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  TAG_EXISTS: 409,
  RATE_LIMITED: 429,
  SEGMENTS_EXHAUSTED: 503,
  STORE_UNAVAILABLE: 503,
  STORE_ROLLBACK_DETECTED: 503,
  CLOCK_MOVED_BACKWARDS: 503,
  LEASE_LOST: 503,
  ID_SPACE_EXHAUSTED: 503,
  INTERNAL: 500,
};
