/**
 * The short-link example against the real PostgreSQL and a real `sequoia
 * serve` (SQLite store in a temp dir) started here. Each run uses its own
 * PostgreSQL schemas (random suffix), dropped at the end. Faults come from
 * TCP proxies: one in front of Sequoia (Sequoia unreachable), one in front of
 * the app (an answer lost after the commit).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createClient, type ClientOptions, type SequoiaClient } from 'sequoia-id/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BIN, type ServerProcess, startServe } from '../../../test/helpers/cli.js';
import { FaultProxy } from '../../../test/helpers/fault-proxy.js';
import { describeWithService } from '../../../test/helpers/services.js';
import { buildShortlinkApp } from '../src/app.js';
import { type CodeScheme, permutedCodes, plainCodes } from '../src/codes.js';
import { ensureTag, startLocalSequoia } from '../src/sequoia.js';
import { ConfigError, startShortlink } from '../src/start.js';
import { LinkStore } from '../src/store.js';

const PG_URL = process.env.SEQUOIA_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TAG = 'short_link';

const describePg = await describeWithService('PostgreSQL', async () => {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  await c.connect();
  await c.end();
});

interface RunningApp {
  readonly url: string;
  /** Every ID the app drew from Sequoia, in order. */
  readonly drawn: bigint[];
  readonly store: LinkStore;
  readonly schema: string;
  close(): Promise<void>;
}

interface PostResult {
  status: number;
  body: Record<string, unknown> & { error?: { code: string; message: string } };
  headers: Headers;
}

async function post(base: string, key: string | undefined, body: unknown): Promise<PostResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== undefined) headers['idempotency-key'] = key;
  const res = await fetch(`${base}/links`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  return { status: res.status, body: (await res.json()) as PostResult['body'], headers: res.headers };
}

/** Runs `fn` over `items` with at most `width` calls in flight. */
async function pooled<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

describePg('the short-link example, on PostgreSQL and a real sequoia serve', () => {
  let work: string;
  let sequoia: ServerProcess;
  let sequoiaProxy: FaultProxy;
  let pool: pg.Pool;
  const schemas: string[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'shortlink-'));
    sequoia = await startServe(['--store', `sqlite:${join(work, 'ids.db')}`, '--state-dir', join(work, 'state')]);
    await ensureTag(sequoia.url, TAG);
    sequoiaProxy = await FaultProxy.start('127.0.0.1', Number(new URL(sequoia.url).port));
    pool = new pg.Pool({ connectionString: PG_URL, max: 12, connectionTimeoutMillis: 5000 });
  });

  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    for (const s of schemas) await pool?.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`).catch(() => undefined);
    await pool?.end();
    await sequoiaProxy?.close();
    if (sequoia !== undefined) {
      sequoia.child.kill('SIGTERM');
      await sequoia.exited;
    }
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  /** The app on a free port, with its own Sequoia client; its own schema unless `schema` names another app's. */
  async function startApp(opts: { codes?: CodeScheme; client?: Partial<ClientOptions>; sequoiaUrl?: string; pool?: pg.Pool; schema?: string } = {}): Promise<RunningApp> {
    const schema = opts.schema ?? `shortlink_test_${randomBytes(5).toString('hex')}`;
    if (opts.schema === undefined) schemas.push(schema);
    const store = new LinkStore(pool, schema);
    await store.migrate();
    const appStore = opts.pool === undefined ? store : new LinkStore(opts.pool, schema);
    const client: SequoiaClient = createClient({ url: opts.sequoiaUrl ?? sequoia.url, ...opts.client });
    const drawn: bigint[] = [];
    const ids = {
      async next(tag: string) {
        const id = await client.next(tag);
        drawn.push(id);
        return id;
      },
    };
    const app = buildShortlinkApp({ store: appStore, ids, tag: TAG, codes: opts.codes ?? plainCodes(), baseUrl: 'https://sho.rt' });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const close = async () => {
      await app.close();
      await client.close();
    };
    cleanups.push(close);
    return { url, drawn, store, schema, close };
  }

  const count = async (sql: string, params: unknown[] = []) => Number((await pool.query<{ n: string }>(sql, params)).rows[0]!.n);

  it('creates a link, redirects with 301, describes it, and replays the same key', async () => {
    const app = await startApp();
    const created = await post(app.url, 'key-1', { url: 'https://example.com/a?b=c' });
    expect(created.status).toBe(201);
    const code = created.body.code as string;
    expect(code).toMatch(/^[0-9A-Za-z]+$/);
    expect(created.body).toEqual({ code, shortUrl: `https://sho.rt/${code}`, url: 'https://example.com/a?b=c', createdAt: expect.any(String) });
    // Plain Base62 is the ID in another notation (what the README warns about).
    expect(code).toBe(plainCodes().encode(app.drawn[0]!));

    const go = await fetch(`${app.url}/${code}`, { redirect: 'manual' });
    expect(go.status).toBe(301);
    expect(go.headers.get('location')).toBe('https://example.com/a?b=c');
    const meta = await fetch(`${app.url}/links/${code}`);
    expect(meta.status).toBe(200);
    expect(await meta.json()).toEqual(created.body);

    const again = await post(app.url, 'key-1', { url: 'https://example.com/a?b=c' });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(created.body);
    expect(app.drawn).toHaveLength(1);

    const reused = await post(app.url, 'key-1', { url: 'https://example.com/other' });
    expect([reused.status, reused.body.error?.code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    expect(app.drawn).toHaveLength(1);
  });

  it('an ID already in the table is a unique-key conflict: reported to Sequoia (its counter), 503 ID_CONFLICT, nothing created', async () => {
    const schema = `shortlink_test_${randomBytes(5).toString('hex')}`;
    schemas.push(schema);
    const store = new LinkStore(pool, schema);
    await store.migrate();
    const client = createClient({ url: sequoia.url });
    // A source that hands out one ID twice: what a store restored from an old backup would do.
    const first = await client.next(TAG);
    const ids = { next: async () => first, reportConflict: (tag: string, id: bigint, detail?: string) => client.reportConflict(tag, id, detail) };
    const app = buildShortlinkApp({ store, ids, tag: TAG, codes: plainCodes(), baseUrl: 'https://sho.rt' });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    cleanups.push(async () => {
      await app.close();
      await client.close();
    });
    const post = (key: string) => fetch(`${url}/links`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify({ url: 'https://example.com/a' }) });
    expect((await post('k-conflict-1')).status).toBe(201);
    const second = await post('k-conflict-2');
    expect(second.status).toBe(503);
    expect(((await second.json()) as { error: { code: string } }).error.code).toBe('ID_CONFLICT');
    expect(await count(`SELECT count(*) AS n FROM "${schema}".short_link`)).toBe(1);
    const metrics = await (await fetch(`${sequoia.url}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`^sequoia_business_conflicts_total\\{tag="${TAG}"\\} [1-9]`, 'm'));
  });

  it('refuses bad input with a stable code, and creates nothing', async () => {
    const app = await startApp();
    const cases: [string | undefined, unknown, number, string][] = [
      [undefined, { url: 'https://example.com/' }, 400, 'IDEMPOTENCY_KEY_REQUIRED'],
      ['x'.repeat(65), { url: 'https://example.com/' }, 400, 'INVALID_IDEMPOTENCY_KEY'],
      ['k', { url: 'javascript:alert(1)' }, 400, 'INVALID_URL'],
      ['k', { url: 'ftp://example.com/file' }, 400, 'INVALID_URL'],
      ['k', { url: 'data:text/html,hi' }, 400, 'INVALID_URL'],
      ['k', { url: '/relative/path' }, 400, 'INVALID_URL'],
      ['k', { url: 'https://user:secret@example.com/' }, 400, 'INVALID_URL'],
      ['k', { url: `https://example.com/${'a'.repeat(2100)}` }, 400, 'INVALID_URL'],
      ['k', { url: 'https://exa mple.com/' }, 400, 'INVALID_URL'],
      ['k', { url: 42 }, 400, 'INVALID_URL'],
      ['k', {}, 400, 'INVALID_URL'],
      ['k', '{"url":', 400, 'INVALID_REQUEST'],
      ['k', { url: `https://example.com/${'a'.repeat(20_000)}` }, 413, 'BODY_TOO_LARGE'],
    ];
    for (const [key, body, status, code] of cases) {
      const r = await post(app.url, key, body);
      expect([JSON.stringify(body).slice(0, 60), r.status, r.body.error?.code]).toEqual([JSON.stringify(body).slice(0, 60), status, code]);
      expect(JSON.stringify(r.body)).not.toMatch(/\n\s+at /);
    }
    const text = await fetch(`${app.url}/links`, { method: 'POST', headers: { 'idempotency-key': 'k', 'content-type': 'text/plain' }, body: 'https://example.com/' });
    expect(text.status).toBe(415);
    expect(((await text.json()) as { error: { code: string } }).error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    for (const path of ['/nope', '/links/nope', '/no-such-code!', `/${'z'.repeat(17)}`]) {
      const r = await fetch(`${app.url}${path}`, { redirect: 'manual' });
      expect([path, r.status, ((await r.json()) as { error: { code: string } }).error.code]).toEqual([path, 404, 'LINK_NOT_FOUND']);
    }
    expect(app.drawn).toHaveLength(0);
    expect(await count(`SELECT count(*) AS n FROM "${app.schema}".short_link`)).toBe(0);
  });

  it('concurrent requests with one key, to two app instances, make one link; the losers read it and their IDs are never used', async () => {
    const app = await startApp();
    const other = await startApp({ schema: app.schema });
    const keys = Array.from({ length: 5 }, (_, i) => `dup-${i}`);
    const results = await Promise.all(
      keys.flatMap((key) => Array.from({ length: 10 }, (_, i) => post((i % 2 === 0 ? app : other).url, key, { url: `https://example.com/${key}` }).then((r) => ({ key, ...r })))),
    );
    for (const key of keys) {
      const mine = results.filter((r) => r.key === key);
      expect(mine.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
      expect(new Set(mine.map((r) => r.body.code)).size).toBe(1);
      expect(await count(`SELECT count(*) AS n FROM "${app.schema}".short_link WHERE request_key = $1`, [key])).toBe(1);
      expect(await count(`SELECT count(*) AS n FROM "${app.schema}".request_result WHERE request_key = $1`, [key])).toBe(1);
    }
    // The race was real: more IDs were drawn than links made, and the extra ones are simply gone.
    const drawn = [...app.drawn, ...other.drawn];
    expect(new Set(drawn).size).toBe(drawn.length);
    expect(drawn.length).toBeGreaterThan(keys.length);
    const stored = (await pool.query<{ id: string }>(`SELECT id FROM "${app.schema}".short_link`)).rows.map((r) => BigInt(r.id));
    expect(stored).toHaveLength(keys.length);
    const wasted = drawn.filter((id) => !stored.includes(id));
    expect(wasted).toHaveLength(drawn.length - keys.length);
    const later = await post(app.url, 'after-the-race', { url: 'https://example.com/later' });
    expect(later.status).toBe(201);
    const laterId = app.drawn.at(-1)!;
    expect(wasted).not.toContain(laterId);
    expect(laterId > app.drawn.slice(0, -1).reduce((a, b) => (a > b ? a : b))).toBe(true);
  });

  it('an answer lost after the commit is recovered by the key, without drawing a new ID', async () => {
    const app = await startApp();
    const proxy = await FaultProxy.start('127.0.0.1', Number(new URL(app.url).port));
    cleanups.push(() => proxy.close());
    const via = `http://127.0.0.1:${proxy.port}`;

    proxy.stall('down'); // requests reach the app; its answers are held
    const lost = post(via, 'lost-1', { url: 'https://example.com/lost' });
    const settled = lost.then(
      () => 'answered',
      () => 'failed',
    );
    let link;
    for (let i = 0; i < 200 && link === undefined; i++) {
      link = await app.store.findByKey('lost-1');
      if (link === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    expect(link).toBeDefined();
    expect(app.drawn).toHaveLength(1);
    proxy.cut(); // the answer never arrives
    expect(await settled).toBe('failed');
    proxy.restore();

    const retry = await post(via, 'lost-1', { url: 'https://example.com/lost' });
    expect(retry.status).toBe(200);
    expect(retry.body.code).toBe(link!.code);
    expect(app.drawn).toHaveLength(1);
    expect(await count(`SELECT count(*) AS n FROM "${app.schema}".short_link`)).toBe(1);
  });

  it('a commit whose answer the app never gets: it asks by key, answers 503, and the retry returns that link without a new ID', async () => {
    const pgUrl = new URL(PG_URL);
    const pgProxy = await FaultProxy.start('127.0.0.1', Number(pgUrl.port || 5432));
    cleanups.push(() => pgProxy.close());
    const appName = `shortlink-test-${randomBytes(4).toString('hex')}`;
    pgUrl.hostname = '127.0.0.1';
    pgUrl.port = String(pgProxy.port);
    const appPool = new pg.Pool({ connectionString: pgUrl.toString(), max: 4, connectionTimeoutMillis: 2000, application_name: appName });
    appPool.on('error', () => undefined); // idle connections die with the proxy's cut
    cleanups.push(() => appPool.end());
    const app = await startApp({ pool: appPool });
    // The commit of this one key takes 1.5 s (a deferred trigger), long enough to hold back its answer.
    await pool.query(`CREATE FUNCTION "${app.schema}".slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.request_key = 'slow-commit' THEN PERFORM pg_sleep(1.5); END IF; RETURN NULL; END $$`);
    await pool.query(`CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON "${app.schema}".request_result
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "${app.schema}".slow_commit()`);

    const first = post(app.url, 'slow-commit', { url: 'https://example.com/slow' });
    let committing = false;
    for (let i = 0; i < 200 && !committing; i++) {
      const r = await pool.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND query = 'COMMIT' AND wait_event = 'PgSleep'`, [appName]);
      committing = r.rowCount === 1;
      if (!committing) await new Promise((r) => setTimeout(r, 20));
    }
    expect(committing).toBe(true);
    pgProxy.stall('down'); // the COMMIT's answer will be held
    let link;
    for (let i = 0; i < 200 && link === undefined; i++) {
      link = await app.store.findByKey('slow-commit');
      if (link === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    expect(link).toBeDefined(); // committed, but the app does not know it
    pgProxy.cut();
    const answer = await first;
    expect([answer.status, answer.body.error?.code]).toEqual([503, 'DATABASE_UNAVAILABLE']);
    expect(answer.headers.get('retry-after')).toBe('1');
    pgProxy.restore();

    const retry = await post(app.url, 'slow-commit', { url: 'https://example.com/slow' });
    expect(retry.status).toBe(200);
    expect(retry.body.code).toBe(link!.code);
    expect(app.drawn).toHaveLength(1);
    expect(await count(`SELECT count(*) AS n FROM "${app.schema}".short_link`)).toBe(1);
  });

  it('a connection lost between the two inserts leaves neither row: the key stays free and a retry creates the link', async () => {
    const app = await startApp();
    // Hold this one key's transaction after its short_link row, as if the app died right there.
    await pool.query(`CREATE FUNCTION "${app.schema}".hold() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.request_key = 'cut-mid-transaction' THEN PERFORM pg_sleep(30); END IF; RETURN NEW; END $$`);
    await pool.query(`CREATE TRIGGER hold BEFORE INSERT ON "${app.schema}".request_result FOR EACH ROW EXECUTE FUNCTION "${app.schema}".hold()`);
    const first = post(app.url, 'cut-mid-transaction', { url: 'https://example.com/cut' });
    let pid: number | undefined;
    for (let i = 0; i < 200 && pid === undefined; i++) {
      const r = await pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE $1`, [`%"${app.schema}".request_result%`]);
      pid = r.rows[0]?.pid;
      if (pid === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    expect(pid).toBeDefined();
    await pool.query('SELECT pg_terminate_backend($1)', [pid]);
    const answer = await first;
    expect([answer.status, answer.body.error?.code]).toEqual([503, 'DATABASE_UNAVAILABLE']);
    expect(await count(`SELECT count(*) AS n FROM "${app.schema}".short_link WHERE request_key = 'cut-mid-transaction'`)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM "${app.schema}".request_result`)).toBe(0);

    await pool.query(`DROP TRIGGER hold ON "${app.schema}".request_result`);
    const retry = await post(app.url, 'cut-mid-transaction', { url: 'https://example.com/cut' });
    expect(retry.status).toBe(201);
    expect(app.drawn).toHaveLength(2); // the first attempt's ID is not reused
    expect(retry.body.code).toBe(plainCodes().encode(app.drawn[1]!));
    expect(await count(`SELECT count(*) AS n FROM "${app.schema}".short_link`)).toBe(1);
  });

  it('Sequoia unreachable: 503 with Retry-After and nothing created; the same key succeeds once it is back', async () => {
    // A one-ID batch, so the client's buffer runs dry within a few requests.
    const app = await startApp({
      sequoiaUrl: `http://127.0.0.1:${sequoiaProxy.port}`,
      // No reserve range: this checks the app's answer once the client has no ID left (the reserve is tested in test/client/reserve.test.ts).
      client: { batch: { initial: 1, min: 1, max: 1 }, reserve: false, timeoutMs: 500, retry: { attempts: 2, baseDelayMs: 20, maxDelayMs: 50 } },
    });
    expect((await post(app.url, 'warm', { url: 'https://example.com/warm' })).status).toBe(201);
    sequoiaProxy.cut();
    let refused: { key: string; r: PostResult } | undefined;
    try {
      // Buffered IDs still serve a request or two: that is the buffer doing its job.
      for (let i = 0; i < 6 && refused === undefined; i++) {
        const key = `down-${i}`;
        const r = await post(app.url, key, { url: `https://example.com/down/${i}` });
        if (r.status === 503) refused = { key, r };
        else expect(r.status).toBe(201);
      }
    } finally {
      sequoiaProxy.restore();
    }
    expect(refused).toBeDefined();
    const { key, r } = refused!;
    expect(r.body.error?.code).toBe('ID_SERVICE_UNAVAILABLE');
    expect(r.headers.get('retry-after')).toBe('1');
    expect(await app.store.findByKey(key)).toBeUndefined();
    expect(await count(`SELECT count(*) AS n FROM "${app.schema}".request_result WHERE request_key = $1`, [key])).toBe(0);
    const linksBefore = await count(`SELECT count(*) AS n FROM "${app.schema}".short_link`);

    const back = await post(app.url, key, { url: `https://example.com/down/${key.slice(5)}` });
    expect(back.status).toBe(201);
    expect(await count(`SELECT count(*) AS n FROM "${app.schema}".short_link`)).toBe(linksBefore + 1);
    expect((await app.store.findByKey(key))?.code).toBe(back.body.code);
  });

  it('Sequoia killed and restarted: 503 while it is down, nothing created; then the same key succeeds with an ID never drawn before', async () => {
    const dir = join(work, 'killed');
    const args = ['--store', `sqlite:${join(dir, 'ids.db')}`, '--state-dir', join(dir, 'state')];
    let own = await startServe(args);
    cleanups.push(async () => {
      own.child.kill('SIGTERM');
      await own.exited;
    });
    await ensureTag(own.url, TAG);
    const port = new URL(own.url).port;
    const app = await startApp({ sequoiaUrl: own.url, client: { batch: { initial: 1, min: 1, max: 1 }, reserve: false, timeoutMs: 500, retry: { attempts: 2, baseDelayMs: 20, maxDelayMs: 50 } } });
    for (let i = 0; i < 3; i++) expect((await post(app.url, `before-${i}`, { url: `https://example.com/before/${i}` })).status).toBe(201);

    own.child.kill('SIGKILL');
    await own.exited;
    let refused: string | undefined;
    for (let i = 0; i < 6 && refused === undefined; i++) {
      const r = await post(app.url, `while-down-${i}`, { url: `https://example.com/while-down/${i}` });
      if (r.status === 503) {
        expect(r.body.error?.code).toBe('ID_SERVICE_UNAVAILABLE');
        refused = `while-down-${i}`;
      } else {
        expect(r.status).toBe(201);
      }
    }
    expect(refused).toBeDefined();
    expect(await app.store.findByKey(refused!)).toBeUndefined();
    const linksWhileDown = await count(`SELECT count(*) AS n FROM "${app.schema}".short_link`);

    own = await startServe([...args, '--port', port]); // the same address, so the app's client finds it again
    const back = await post(app.url, refused!, { url: `https://example.com/while-down/${refused!.slice('while-down-'.length)}` });
    expect(back.status).toBe(201);
    expect(await count(`SELECT count(*) AS n FROM "${app.schema}".short_link`)).toBe(linksWhileDown + 1);
    expect(new Set(app.drawn).size).toBe(app.drawn.length);
    const last = app.drawn.at(-1)!;
    expect(app.drawn.slice(0, -1).every((id) => id < last)).toBe(true);
  });

  it('a failed insert wastes its ID: the key stays free and the next link gets a new, higher ID', async () => {
    const app = await startApp();
    // A real database refusal, not a mock: a check constraint this test adds to its own schema.
    await pool.query(`ALTER TABLE "${app.schema}".short_link ADD CONSTRAINT refuse_marked CHECK (long_url NOT LIKE '%/refuse-me%')`);
    const failed = await post(app.url, 'will-fail', { url: 'https://example.com/refuse-me' });
    expect([failed.status, failed.body.error?.code]).toEqual([500, 'INTERNAL']);
    expect(JSON.stringify(failed.body)).not.toMatch(/refuse_marked|\n\s+at /);
    expect(app.drawn).toHaveLength(1);
    const wasted = app.drawn[0]!;
    expect(await app.store.findByKey('will-fail')).toBeUndefined();

    const ok = await post(app.url, 'will-fail', { url: 'https://example.com/fine' });
    expect(ok.status).toBe(201);
    expect(app.drawn).toHaveLength(2);
    expect(app.drawn[1]! > wasted).toBe(true);
    expect(ok.body.code).toBe(plainCodes().encode(app.drawn[1]!));
    expect(await count(`SELECT count(*) AS n FROM "${app.schema}".short_link WHERE id = $1`, [wasted.toString()])).toBe(0);
  });

  it('starts from environment variables, keeps its links across a restart, and names the variable it cannot use', async () => {
    const schema = `shortlink_test_${randomBytes(5).toString('hex')}`;
    schemas.push(schema);
    const env = { PORT: '0', DATABASE_URL: PG_URL, SHORTLINK_SCHEMA: schema, SHORTLINK_SEQUOIA_URL: sequoia.url, SHORTLINK_CODE_KEY: 'a key of sixteen bytes or more', SHORTLINK_LOG: 'off' };
    const lines: string[] = [];
    let running = await startShortlink(env, (l) => lines.push(l));
    let made: PostResult;
    try {
      expect(running.codes).toBe('permuted');
      made = await post(running.url, 'env-1', { url: 'https://example.com/env' });
      expect(made.status).toBe(201);
      expect(made.body.shortUrl).toBe(`${running.url}/${made.body.code as string}`);
      expect(made.body.code).toMatch(/^[0-9A-Za-z]{8}$/);
    } finally {
      await running.stop();
    }
    expect(lines.join('\n')).toContain('codes: permuted');
    running = await startShortlink(env, () => undefined);
    try {
      const go = await fetch(`${running.url}/${made.body.code as string}`, { redirect: 'manual' });
      expect([go.status, go.headers.get('location')]).toEqual([301, 'https://example.com/env']);
      const next = await post(running.url, 'env-2', { url: 'https://example.com/env2' });
      expect(next.status).toBe(201);
      expect(next.body.code).not.toBe(made.body.code);
    } finally {
      await running.stop();
    }

    for (const [bad, name] of [
      [{ PORT: 'eighty' }, 'PORT'],
      [{ PORT: '70000' }, 'PORT'],
      [{ SHORTLINK_CODE_KEY: 'short' }, 'SHORTLINK_CODE_KEY'],
      [{ SHORTLINK_SCHEMA: 'Robert"; DROP' }, 'SHORTLINK_SCHEMA'],
    ] as const) {
      const err = await startShortlink({ ...env, ...bad }, () => undefined).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain(name);
    }
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await expect(startShortlink({ ...env, SHORTLINK_SEQUOIA_URL: `http://127.0.0.1:${closedPort}` }, () => undefined)).rejects.toThrow(
      `cannot reach Sequoia at http://127.0.0.1:${closedPort}: ECONNREFUSED`,
    );
  });

  it('the local Sequoia of the one-command start: listens, serves the tag, stops, and keeps its IDs rising across a restart', async () => {
    const dir = join(work, 'local');
    let local = await startLocalSequoia(dir, BIN);
    let stopped = false;
    cleanups.push(async () => {
      if (!stopped) await local.stop();
    });
    await ensureTag(local.url, TAG);
    await ensureTag(local.url, TAG); // already there: fine
    let client = createClient({ url: local.url });
    const first = await client.next(TAG);
    await client.close();
    await local.stop();
    await expect(fetch(local.url)).rejects.toThrow();

    local = await startLocalSequoia(dir, BIN);
    client = createClient({ url: local.url });
    expect(await client.next(TAG)).toBeGreaterThan(first);
    await client.close();
    await local.stop();
    stopped = true;
  });

  it('10,000 links made through two app instances get 10,000 distinct permuted codes, and every one redirects', { timeout: 600_000 }, async () => {
    const codes = permutedCodes('shortlink example test key');
    const app = await startApp({ codes });
    const other = await startApp({ codes, schema: app.schema });
    const n = 10_000;
    const made = new Map<string, string>();
    await pooled(
      Array.from({ length: n }, (_, i) => i),
      16,
      async (i) => {
        const url = `https://example.com/page/${i}`;
        const r = await post((i % 2 === 0 ? app : other).url, `bulk-${i}`, { url });
        expect(r.status).toBe(201);
        made.set(r.body.code as string, url);
      },
    );
    expect(made.size).toBe(n);
    expect(app.drawn.length + other.drawn.length).toBe(n);
    expect(other.drawn.length).toBeGreaterThan(0);
    for (const code of made.keys()) expect(code).toMatch(/^[0-9A-Za-z]{8}$/);
    // Consecutive IDs do not give neighbouring codes.
    const first = [...made.keys()].slice(0, 100).sort();
    expect(first.filter((c, i) => i > 0 && c.slice(0, 6) === first[i - 1]!.slice(0, 6)).length).toBeLessThan(5);
    expect(await count(`SELECT count(DISTINCT short_code) AS n FROM "${app.schema}".short_link`)).toBe(n);

    let redirected = 0;
    await pooled([...made], 16, async ([code, url]) => {
      const r = await fetch(`${app.url}/${code}`, { redirect: 'manual' });
      await r.arrayBuffer();
      expect([code, r.status, r.headers.get('location')]).toEqual([code, 301, url]);
      redirected++;
    });
    expect(redirected).toBe(n);
  });
});
