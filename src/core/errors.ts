/**
 * The one error hierarchy of Sequoia. Every failure that crosses a layer is a
 * SequoiaError with a stable string `code`. Each code has one row in `ERRORS`
 * below: its HTTP status (the server), its exit status (the CLI and a cluster
 * worker that fails to start), the class it is raised and rebuilt as (the
 * client), and its documentation (docs/http-api.md's error table is checked
 * against it word for word by test/docs.test.ts). Everything else derives
 * from that table: a new code is one new row. Codes are public API: never
 * rename or reuse one.
 */

export class SequoiaError extends Error {
  readonly code: ErrorCode;
  /** Milliseconds after which a retry may succeed, when the failure is transient. */
  readonly retryAfterMs: number | undefined;
  /**
   * What a client may read: the message without the operator's detail. The
   * HTTP layer sends only this (server/error-reply.ts); `message` is the
   * operator's whole sentence (the log, the CLI).
   */
  readonly publicMessage: string;
  /** Where it happened (a path, a URL, a host): the log and the CLI only, never an answer. */
  readonly operatorDetail: string | undefined;

  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SequoiaError';
    this.code = code;
    this.retryAfterMs = options?.retryAfterMs;
    this.operatorDetail = options?.located?.detail;
    this.publicMessage = options?.located?.publicMessage ?? message;
  }
}

/** What an error is made with besides its code and message. */
export interface ErrorOptions {
  readonly cause?: unknown;
  readonly retryAfterMs?: number | undefined;
  /**
   * A message that names where (a path, a host, a URL): the same sentence without
   * it for a client, and the where for the operator. Given where the error is made,
   * so nothing has to scrub the text afterwards (`located` makes both).
   */
  readonly located?: Located | undefined;
}

export interface Located {
  readonly publicMessage: string;
  readonly detail: string;
}

/**
 * A sentence with a where in it, written once: `say(where)` is the operator's
 * message, `say(undefined)` the client's. Spread the result's `located` into
 * the error's options.
 */
export function located(say: (where: string | undefined) => string, where: string): { message: string; located: Located } {
  return { message: say(where), located: { publicMessage: say(undefined), detail: where } };
}

export class InvalidArgumentError extends SequoiaError {
  constructor(message: string, options?: ErrorOptions) {
    super('INVALID_ARGUMENT', message, options);
    this.name = 'InvalidArgumentError';
  }
}

export class TagNotFoundError extends SequoiaError {
  /** `message`: the answer's own message, when rebuilt from a code (the client). */
  constructor(tag: string, message?: string) {
    // The hint names the commands a newcomer needs (they take --store like serve).
    super(
      'TAG_NOT_FOUND',
      message ??
        `tag ${JSON.stringify(tag)} does not exist (list the tags: sequoia tag list; create it: sequoia tag create ${tag}, or POST /v1/tags)`,
    );
    this.name = 'TagNotFoundError';
  }
}

export class TagExistsError extends SequoiaError {
  /** `message`: the answer's own message, when rebuilt from a code (the client). */
  constructor(tag: string, message = `tag ${JSON.stringify(tag)} already exists`) {
    super('TAG_EXISTS', message);
    this.name = 'TagExistsError';
  }
}

export class UnavailableError extends SequoiaError {
  constructor(
    /** One of the codes whose row in ERRORS rebuilds an UnavailableError (src/core/errors.test.ts checks every `new UnavailableError`). */
    code: ErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(code, message, options);
    this.name = 'UnavailableError';
  }
}

export class ClockError extends SequoiaError {
  constructor(message: string, options?: ErrorOptions) {
    super('CLOCK_MOVED_BACKWARDS', message, options);
    this.name = 'ClockError';
  }
}

export function isSequoiaError(e: unknown): e is SequoiaError {
  return e instanceof SequoiaError;
}

/** What an answer carries besides its code, for rebuilding the error from it. */
export interface WireError {
  readonly message: string;
  readonly retryAfterMs?: number | undefined;
  /** The public message and the where, apart (an error from another thread of this process; never from an answer). */
  readonly located?: Located | undefined;
}

/** One code's row. */
export interface ErrorRule {
  /** The HTTP status it is answered with. */
  readonly status: number;
  /** The CLI's exit status: 2 for bad input (the caller must change something), 1 otherwise. */
  readonly exit: 1 | 2;
  /** Makes the class the code is raised as from an answer (the client): the table's class column. */
  readonly rebuild: (w: WireError) => SequoiaError;
  /** The meaning for a caller: docs/http-api.md's error table says exactly this. */
  readonly doc: string;
}

const unavailable =
  (code: string) =>
  (w: WireError): SequoiaError =>
    new UnavailableError(code as ErrorCode, w.message, { retryAfterMs: w.retryAfterMs, located: w.located });
const plain =
  (code: string) =>
  (w: WireError): SequoiaError =>
    new SequoiaError(code as ErrorCode, w.message, { retryAfterMs: w.retryAfterMs, located: w.located });

/**
 * The table of codes, in the order the docs list them. A new code is one row
 * here (status, exit, rebuild with its class, doc); docs/http-api.md's table
 * must then carry the same row (test/docs.test.ts says so if it does not).
 */
export const ERRORS = {
  INVALID_ARGUMENT: {
    status: 400,
    exit: 2,
    rebuild: (w: WireError): SequoiaError => new InvalidArgumentError(w.message, { located: w.located }),
    doc: 'The request or a field of it is malformed or out of range; the message names the field.',
  },
  UNAUTHORIZED: {
    status: 401,
    exit: 1,
    rebuild: plain('UNAUTHORIZED'),
    doc: 'A route that needs a token (admin, or a client token when configured) was called without one.',
  },
  FORBIDDEN: {
    status: 403,
    exit: 1,
    rebuild: plain('FORBIDDEN'),
    doc: 'The token given is wrong, or does not grant this tag.',
  },
  TAG_NOT_FOUND: {
    status: 404,
    exit: 2,
    rebuild: (w: WireError): SequoiaError => new TagNotFoundError('', w.message),
    doc: 'No such tag in the store; create it first.',
  },
  NOT_FOUND: {
    status: 404,
    exit: 1,
    rebuild: plain('NOT_FOUND'),
    doc: 'No such route (on the fallback routes: a tag without a fallback space; on the snowflake routes: a server whose snowflake generator is off, the message says why).',
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    exit: 1,
    rebuild: plain('METHOD_NOT_ALLOWED'),
    doc: 'The route exists, not for this method (any method Node parses, PROPFIND or SEARCH too); the `Allow` header lists the methods it takes.',
  },
  TAG_EXISTS: {
    status: 409,
    exit: 2,
    rebuild: (w: WireError): SequoiaError => new TagExistsError('', w.message),
    doc: 'A tag with this name already exists.',
  },
  RATE_LIMITED: {
    status: 429,
    exit: 1,
    rebuild: plain('RATE_LIMITED'),
    doc: 'Too many requests from this client, too many look-ups of tags the server does not know, or too many open connections (the connection caps); retry after `Retry-After`.',
  },
  SEGMENTS_EXHAUSTED: {
    status: 503,
    exit: 1,
    rebuild: unavailable('SEGMENTS_EXHAUSTED'),
    doc: 'Both ranges are used up and the store did not answer in time (or the last load failed); retry after `Retry-After`.',
  },
  STORE_UNAVAILABLE: {
    status: 503,
    exit: 1,
    rebuild: unavailable('STORE_UNAVAILABLE'),
    doc: "The store cannot be reached (`/readyz`), or the server's state directory cannot record a high-water mark or tick (nothing is handed out until it can).",
  },
  STORE_ROLLBACK_DETECTED: {
    status: 503,
    exit: 1,
    rebuild: unavailable('STORE_ROLLBACK_DETECTED'),
    doc: 'The store answered a range this server (any of its workers) already handed out: it was restored from an old backup. An operator must `fence`; running servers reopen by themselves within seconds of it.',
  },
  CLOCK_MOVED_BACKWARDS: {
    status: 503,
    exit: 1,
    rebuild: (w: WireError): SequoiaError => new ClockError(w.message, { retryAfterMs: w.retryAfterMs, located: w.located }),
    doc: '(snowflake) The clock is behind the last tick beyond the clock policy.',
  },
  LEASE_LOST: {
    status: 503,
    exit: 1,
    rebuild: unavailable('LEASE_LOST'),
    doc: '(snowflake) The worker-id lease is lost or could have expired, or no worker id can be had; no ID is issued until one is held. (fallback routes) Every fallback worker id of the tag is held.',
  },
  ID_SPACE_EXHAUSTED: {
    status: 503,
    exit: 1,
    rebuild: unavailable('ID_SPACE_EXHAUSTED'),
    doc: 'The namespace has no IDs left (a tag at 2^63−1, a layout past its lifetime, a worker-node pool used up); it never wraps.',
  },
  SHUTTING_DOWN: {
    status: 503,
    exit: 1,
    rebuild: unavailable('SHUTTING_DOWN'),
    doc: 'The request arrived while the server drains before stopping; retry after `Retry-After` (another server, or this one once restarted).',
  },
  RESERVE_EXHAUSTED: {
    status: 503,
    exit: 1,
    rebuild: unavailable('RESERVE_EXHAUSTED'),
    doc: '(client SDK) No server answers and the local buffer and reserve of the tag are spent: creation pauses (no ID is invented) until a server answers again.',
  },
  INTERNAL: {
    status: 500,
    exit: 1,
    rebuild: plain('INTERNAL'),
    doc: 'Unexpected; the message carries a request id that the server log also has.',
  },
} as const satisfies Record<string, ErrorRule>;

export type ErrorCode = keyof typeof ERRORS;

/** Every code, in the table's order. */
export const ERROR_CODES = Object.keys(ERRORS) as readonly ErrorCode[];

/** One line per code: what it means for a caller (the table's `doc`). */
export const ERROR_DOCS: Readonly<Record<ErrorCode, string>> = Object.fromEntries(ERROR_CODES.map((c) => [c, ERRORS[c].doc])) as Record<
  ErrorCode,
  string
>;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERRORS, code);
}

/** The class a code is raised and rebuilt as. */
export function errorClassOf(code: ErrorCode): ErrorClass {
  return (Object.getPrototypeOf(ERRORS[code].rebuild({ message: '' })) as { constructor: ErrorClass }).constructor;
}

export type ErrorClass = abstract new (...args: never[]) => SequoiaError;

/** The CLI's exit status for a failure: the code's row for ours, 1 for anything else. */
export function exitStatusFor(e: unknown): 1 | 2 {
  return e instanceof SequoiaError ? ERRORS[e.code].exit : 1;
}

/**
 * Rebuilds the code's own class from an answer (used by the client), or from
 * another thread (with `located`); an unknown code is INTERNAL.
 */
export function errorFromCode(code: string, message: string, retryAfterMs?: number, located?: Located): SequoiaError {
  return ERRORS[isErrorCode(code) ? code : 'INTERNAL'].rebuild({ message, retryAfterMs, located });
}
