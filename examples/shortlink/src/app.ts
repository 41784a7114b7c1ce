/**
 * The HTTP side of the short-link service:
 *   POST /links        Idempotency-Key + {"url"} → 201 {code, shortUrl, url, createdAt}
 *                      (the same key again → 200, the same body, Idempotent-Replayed: true)
 *   GET  /{code}       → 301 to the long URL
 *   GET  /links/{code} → 200 {code, shortUrl, url, createdAt}
 * Errors are {"error":{"code","message"}} with a stable code, never a stack trace.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import { isSequoiaError } from 'sequoia-id/client';
import { CODE_PATTERN, type CodeScheme } from './codes.js';
import { type Link, type LinkStore, isConnectionError } from './store.js';
import { IDEMPOTENCY_KEY, checkLongUrl } from './urls.js';

/** Where IDs come from: a `sequoia-id/client` SequoiaClient fits. */
export interface IdSource {
  next(tag: string): Promise<bigint>;
  /** Tells Sequoia the database already held this ID (SequoiaClient.reportConflict): it pages an operator. */
  reportConflict?(tag: string, id: bigint, detail?: string): Promise<unknown>;
}

export interface ShortlinkOptions {
  readonly store: LinkStore;
  readonly ids: IdSource;
  /** The Sequoia segment tag (default `short_link`). */
  readonly tag?: string;
  readonly codes: CodeScheme;
  /** Prefix of every shortUrl, e.g. `https://sho.rt`; a function when it is known only once listening. */
  readonly baseUrl: string | (() => string);
  readonly logger?: FastifyServerOptions['logger'];
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

const unavailable = (code: string, message: string) => new HttpError(503, code, message, 1);

export function buildShortlinkApp(opts: ShortlinkOptions): FastifyInstance {
  const { store, ids, codes } = opts;
  const tag = opts.tag ?? 'short_link';
  const base = () => (typeof opts.baseUrl === 'string' ? opts.baseUrl : opts.baseUrl()).replace(/\/+$/, '');
  const app = Fastify({ logger: opts.logger ?? false, bodyLimit: 16 * 1024 });
  // JSON only: a text body would otherwise reach the handler as a string.
  app.removeContentTypeParser('text/plain');

  const view = (link: Link) => ({ code: link.code, shortUrl: `${base()}/${link.code}`, url: link.url, createdAt: link.createdAt.toISOString() });

  /** The answer for a key that already has a link: the same link, unless the key is being reused for another URL. */
  const replay = (reply: FastifyReply, link: Link, url: string) => {
    if (link.url !== url) {
      throw new HttpError(422, 'IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was already used to create a link to another URL');
    }
    return reply.code(200).header('idempotent-replayed', 'true').send(view(link));
  };

  /** Store calls fail as 503 when the database is unreachable, so the client retries with the same key. */
  const db = async <T>(what: () => Promise<T>): Promise<T> => {
    try {
      return await what();
    } catch (e) {
      if (isConnectionError(e)) throw unavailable('DATABASE_UNAVAILABLE', 'the database is unavailable; retry with the same Idempotency-Key');
      throw e;
    }
  };

  app.post('/links', async (req, reply) => {
    const key = req.headers['idempotency-key'];
    if (key === undefined) throw new HttpError(400, 'IDEMPOTENCY_KEY_REQUIRED', 'POST /links needs an Idempotency-Key header');
    if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
      throw new HttpError(400, 'INVALID_IDEMPOTENCY_KEY', 'Idempotency-Key must be 1 to 64 printable ASCII characters');
    }
    const body = req.body as { url?: unknown } | null;
    const checked = checkLongUrl(body !== null && typeof body === 'object' ? body.url : undefined);
    if (!checked.ok) throw new HttpError(400, 'INVALID_URL', checked.message);
    const url = checked.url;

    // A retry after a lost answer ends here: the key finds the first result and no ID is drawn.
    const earlier = await db(() => store.findByKey(key));
    if (earlier !== undefined) return replay(reply, earlier, url);

    let id: bigint;
    try {
      id = await ids.next(tag);
    } catch (e) {
      req.log.warn({ err: e }, 'no ID from Sequoia');
      if (isSequoiaError(e) && (e.code === 'TAG_NOT_FOUND' || e.code === 'INVALID_ARGUMENT' || e.code === 'UNAUTHORIZED' || e.code === 'FORBIDDEN')) {
        throw e; // misconfiguration, not an outage: a 500 an operator will see
      }
      throw unavailable('ID_SERVICE_UNAVAILABLE', 'no ID could be obtained from Sequoia; nothing was created, retry with the same Idempotency-Key');
    }
    const code = codes.encode(id);

    let result;
    try {
      result = await store.create(id, code, url, key);
    } catch (e) {
      if (!isConnectionError(e)) throw e;
      // The commit's answer is lost: the link may or may not exist. Ask by key; never draw a new ID for this attempt.
      req.log.warn({ err: e, key }, 'transaction outcome unknown; looking the key up');
      const after = await db(() => store.findByKey(key));
      if (after === undefined) throw unavailable('DATABASE_UNAVAILABLE', 'the database is unavailable; retry with the same Idempotency-Key');
      return after.code === code ? reply.code(201).send(view(after)) : replay(reply, after, url);
    }
    if (result.kind === 'created') return reply.code(201).send(view(result.link));
    if (result.kind === 'id-taken') {
      // The database's unique key caught a repeated ID: the alarm Sequoia pages on. Nothing was created.
      req.log.error({ id: id.toString(), tag, constraint: result.constraint }, 'unique-key conflict on a Sequoia ID; reported');
      await ids.reportConflict?.(tag, id, `shortlink ${result.constraint}`).catch((e: unknown) => req.log.error({ err: e }, 'could not report the conflict to Sequoia'));
      throw unavailable('ID_CONFLICT', 'the ID drawn was already used; it was reported; retry with the same Idempotency-Key');
    }
    // Lost the race for this key: the winner's link is the answer, this request's ID stays unused.
    const winner = await db(() => store.findByKey(key));
    if (winner === undefined) throw new Error(`request key ${key} was taken but has no result`);
    return replay(reply, winner, url);
  });

  const lookup = async (code: string): Promise<Link> => {
    const link = CODE_PATTERN.test(code) ? await db(() => store.findByCode(code)) : undefined;
    if (link === undefined) throw new HttpError(404, 'LINK_NOT_FOUND', 'no link has this code');
    return link;
  };

  app.get<{ Params: { code: string } }>('/links/:code', async (req) => view(await lookup(req.params.code)));

  app.get<{ Params: { code: string } }>('/:code', async (req, reply) => {
    const link = await lookup(req.params.code);
    return reply.code(301).header('location', link.url).send();
  });

  app.setNotFoundHandler((_req, reply) => {
    void reply.code(404).send({ error: { code: 'NOT_FOUND', message: 'no such route' } });
  });

  app.setErrorHandler((err, req, reply) => {
    if (err instanceof HttpError) {
      if (err.retryAfterSeconds !== undefined) void reply.header('retry-after', String(err.retryAfterSeconds));
      return reply.code(err.status).send({ error: { code: err.code, message: err.message } });
    }
    const status = (err as { statusCode?: number }).statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      // Fastify's own rejections: malformed JSON, wrong content type, body too large.
      const code = status === 413 ? 'BODY_TOO_LARGE' : status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'INVALID_REQUEST';
      return reply.code(status).send({ error: { code, message: err instanceof Error ? err.message : 'invalid request' } });
    }
    req.log.error({ err }, 'request failed');
    return reply.code(500).send({ error: { code: 'INTERNAL', message: 'internal error' } });
  });

  return app;
}
