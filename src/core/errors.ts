/**
 * The one error hierarchy of Sequoia. Every failure that crosses a layer is a
 * SequoiaError with a stable string `code`; the server maps codes to HTTP
 * statuses (src/server/error-status.ts), the CLI to messages, the client back
 * to these classes. Codes are public API: never rename or reuse one.
 */

export const ERROR_CODES = [
  'INVALID_ARGUMENT',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'TAG_NOT_FOUND',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'TAG_EXISTS',
  'RATE_LIMITED',
  'SEGMENTS_EXHAUSTED',
  'STORE_UNAVAILABLE',
  'STORE_ROLLBACK_DETECTED',
  'CLOCK_MOVED_BACKWARDS',
  'LEASE_LOST',
  'ID_SPACE_EXHAUSTED',
  'SHUTTING_DOWN',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** One line per code: what it means for a caller. Checked against the README by a test. */
export const ERROR_DOCS: Record<ErrorCode, string> = {
  INVALID_ARGUMENT: 'The request or a field of it is malformed or out of range; fix the input.',
  UNAUTHORIZED: 'A credential is required and none was given.',
  FORBIDDEN: 'The credential given does not grant this operation.',
  TAG_NOT_FOUND: 'No such tag in the store; create it first.',
  NOT_FOUND: 'No such route.',
  METHOD_NOT_ALLOWED: 'The route exists but not for this HTTP method.',
  TAG_EXISTS: 'A tag with this name already exists.',
  RATE_LIMITED: 'Too many requests from this client; retry after the given delay.',
  SEGMENTS_EXHAUSTED: 'Both buffered segments are used up and the store did not answer in time; retry later.',
  STORE_UNAVAILABLE: 'The backing store cannot be reached, or the server\'s state directory cannot be written.',
  STORE_ROLLBACK_DETECTED:
    'The store answered a range this server has already handed out (restored from an old backup?); an operator must run `sequoia fence`.',
  CLOCK_MOVED_BACKWARDS: 'The clock is behind the last issued tick beyond what the clock policy allows.',
  LEASE_LOST: 'The worker-id lease is lost or could have expired; no ID is issued until it is held again.',
  ID_SPACE_EXHAUSTED: 'The namespace has no IDs left (a tag at 2^63-1, or a layout past its lifetime); it never wraps.',
  SHUTTING_DOWN: 'The server is draining before it stops; retry after the given delay (another server, or this one once restarted).',
  INTERNAL: 'An unexpected server error; the message carries a request id to find it in the logs.',
};

export class SequoiaError extends Error {
  readonly code: ErrorCode;
  /** Milliseconds after which a retry may succeed, when the failure is transient. */
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SequoiaError';
    this.code = code;
    this.retryAfterMs = options?.retryAfterMs;
  }
}

export class InvalidArgumentError extends SequoiaError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INVALID_ARGUMENT', message, options);
    this.name = 'InvalidArgumentError';
  }
}

export class TagNotFoundError extends SequoiaError {
  constructor(tag: string) {
    // The hint names the commands a newcomer needs (they take --store like serve).
    super('TAG_NOT_FOUND', `tag ${JSON.stringify(tag)} does not exist (list the tags: sequoia tag list; create it: sequoia tag create ${tag}, or POST /v1/tags)`);
    this.name = 'TagNotFoundError';
  }
}

export class TagExistsError extends SequoiaError {
  constructor(tag: string) {
    super('TAG_EXISTS', `tag ${JSON.stringify(tag)} already exists`);
    this.name = 'TagExistsError';
  }
}

export class UnavailableError extends SequoiaError {
  constructor(
    code: 'SEGMENTS_EXHAUSTED' | 'STORE_UNAVAILABLE' | 'STORE_ROLLBACK_DETECTED' | 'LEASE_LOST' | 'ID_SPACE_EXHAUSTED',
    message: string,
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    super(code, message, options);
    this.name = 'UnavailableError';
  }
}

export class ClockError extends SequoiaError {
  constructor(message: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super('CLOCK_MOVED_BACKWARDS', message, options);
    this.name = 'ClockError';
  }
}

export function isSequoiaError(e: unknown): e is SequoiaError {
  return e instanceof SequoiaError;
}

/** Rebuilds the right class from a code and message (used by the client). */
export function errorFromCode(code: string, message: string, retryAfterMs?: number): SequoiaError {
  const known = (ERROR_CODES as readonly string[]).includes(code) ? (code as ErrorCode) : 'INTERNAL';
  switch (known) {
    case 'INVALID_ARGUMENT':
      return new InvalidArgumentError(message);
    case 'CLOCK_MOVED_BACKWARDS':
      return new ClockError(message, { retryAfterMs });
    case 'SEGMENTS_EXHAUSTED':
    case 'STORE_UNAVAILABLE':
    case 'STORE_ROLLBACK_DETECTED':
    case 'LEASE_LOST':
    case 'ID_SPACE_EXHAUSTED':
      return new UnavailableError(known, message, { retryAfterMs });
    default:
      return new SequoiaError(known, message, { retryAfterMs });
  }
}
