/** The HTTP status of every code, derived from the one table of codes (core/errors.ts). */
import { ERROR_CODES, ERRORS, type ErrorCode } from '../core/errors.js';

export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = Object.fromEntries(
  ERROR_CODES.map((c) => [c, ERRORS[c].status]),
) as Record<ErrorCode, number>;
