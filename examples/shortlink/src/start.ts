/**
 * Wiring from environment variables; `npm start` runs it (src/main.ts).
 *   PORT, HOST                     where to listen (3000, 127.0.0.1)
 *   DATABASE_URL                   postgres://postgres@127.0.0.1:5432/test
 *   SHORTLINK_SCHEMA               the PostgreSQL schema of the two tables (shortlink)
 *   SHORTLINK_SEQUOIA_URL          a running Sequoia; unset: start `sequoia serve` with its data in ./data/sequoia
 *   SHORTLINK_SEQUOIA_TOKEN        bearer token for Sequoia, when it has one
 *   SHORTLINK_TAG                  the segment tag (short_link), created if missing
 *   SHORTLINK_BASE_URL             prefix of shortUrl (http://HOST:PORT)
 *   SHORTLINK_CODE_KEY             16+ byte secret: codes go through the keyed permutation (8 characters, not sequential)
 */
import pg from 'pg';
import { createClient } from 'sequoia-id/client';
import { buildShortlinkApp } from './app.js';
import { type CodeScheme, permutedCodes, plainCodes } from './codes.js';
import { type LocalSequoia, ensureTag, startLocalSequoia } from './sequoia.js';
import { LinkStore, SCHEMA_NAME } from './store.js';

/** A setting that cannot be used; the message names the variable. */
export class ConfigError extends Error {}

export interface Running {
  readonly url: string;
  readonly sequoiaUrl: string;
  readonly codes: string;
  stop(): Promise<void>;
}

export async function startShortlink(env: NodeJS.ProcessEnv, log: (line: string) => void = console.log): Promise<Running> {
  const port = Number(env.PORT ?? 3000);
  if (!/^\d+$/.test(env.PORT ?? '3000') || port > 65535) throw new ConfigError(`PORT must be an integer from 0 to 65535, got ${JSON.stringify(env.PORT)}`);
  const host = env.HOST ?? '127.0.0.1';
  const tag = env.SHORTLINK_TAG ?? 'short_link';
  const schema = env.SHORTLINK_SCHEMA ?? 'shortlink';
  if (!SCHEMA_NAME.test(schema)) throw new ConfigError(`SHORTLINK_SCHEMA must match ${SCHEMA_NAME.source}, got ${JSON.stringify(schema)}`);
  const token = env.SHORTLINK_SEQUOIA_TOKEN;
  let codes: CodeScheme = plainCodes();
  if (env.SHORTLINK_CODE_KEY !== undefined) {
    if (Buffer.byteLength(env.SHORTLINK_CODE_KEY) < 16) throw new ConfigError('SHORTLINK_CODE_KEY must be at least 16 bytes');
    codes = permutedCodes(env.SHORTLINK_CODE_KEY);
  }

  const stops: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
    stops.length = 0;
  };
  try {
    let sequoiaUrl = env.SHORTLINK_SEQUOIA_URL;
    if (sequoiaUrl === undefined) {
      const local: LocalSequoia = await startLocalSequoia('./data/sequoia');
      stops.push(() => local.stop());
      sequoiaUrl = local.url;
      log(`started a local Sequoia at ${sequoiaUrl} (data in ./data/sequoia)`);
    }
    await ensureTag(sequoiaUrl, tag, { token });

    const pool = new pg.Pool({ connectionString: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test', max: 10, connectionTimeoutMillis: 2000 });
    stops.push(() => pool.end());
    // An idle connection that dies (a database restart) must not end the process; the next query reconnects.
    pool.on('error', (e) => log(`idle PostgreSQL connection lost: ${e.message}`));
    const store = new LinkStore(pool, schema);
    await store.migrate();
    const ids = createClient({ url: sequoiaUrl, token, tags: [tag], timeoutMs: 1000, retry: { attempts: 3, baseDelayMs: 50, maxDelayMs: 500 } });
    stops.push(() => ids.close());

    let url = '';
    const app = buildShortlinkApp({ store, ids, tag, codes, baseUrl: env.SHORTLINK_BASE_URL ?? (() => url), logger: env.SHORTLINK_LOG === 'off' ? false : { level: 'info' } });
    url = await app.listen({ host, port });
    stops.push(() => app.close());
    log(`short links on ${url} (codes: ${codes.name}, Sequoia tag ${tag})`);
    return { url, sequoiaUrl, codes: codes.name, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
