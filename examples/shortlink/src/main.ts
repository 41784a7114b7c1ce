/**
 * `npm start`: the short-link service on http://127.0.0.1:3000, against the
 * local PostgreSQL and a Sequoia server. Settings (environment):
 *   PORT, HOST                     where to listen (3000, 127.0.0.1)
 *   DATABASE_URL                   postgres://postgres@127.0.0.1:5432/test
 *   SHORTLINK_SCHEMA               the PostgreSQL schema for the two tables (shortlink)
 *   SHORTLINK_SEQUOIA_URL          a running Sequoia; unset: start `sequoia serve` with its data in ./data
 *   SHORTLINK_SEQUOIA_TOKEN        bearer token for Sequoia, when it has one
 *   SHORTLINK_TAG                  the segment tag (short_link), created if missing
 *   SHORTLINK_BASE_URL             prefix of shortUrl (http://HOST:PORT)
 *   SHORTLINK_CODE_KEY             16+ byte secret: codes go through the keyed permutation (8 characters, not sequential)
 */
import pg from 'pg';
import { createClient } from 'sequoia/client';
import { buildShortlinkApp } from './app.js';
import { type CodeScheme, permutedCodes, plainCodes } from './codes.js';
import { type LocalSequoia, ensureTag, startLocalSequoia } from './sequoia.js';
import { LinkStore } from './store.js';

const env = process.env;
const port = Number(env.PORT ?? 3000);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`PORT must be an integer from 0 to 65535, got ${JSON.stringify(env.PORT)}`);
const host = env.HOST ?? '127.0.0.1';
const tag = env.SHORTLINK_TAG ?? 'short_link';
const token = env.SHORTLINK_SEQUOIA_TOKEN;
let codes: CodeScheme = plainCodes();
if (env.SHORTLINK_CODE_KEY !== undefined) {
  if (Buffer.byteLength(env.SHORTLINK_CODE_KEY) < 16) fail('SHORTLINK_CODE_KEY must be at least 16 bytes');
  codes = permutedCodes(env.SHORTLINK_CODE_KEY);
}

let local: LocalSequoia | undefined;
let sequoiaUrl = env.SHORTLINK_SEQUOIA_URL;
if (sequoiaUrl === undefined) {
  local = await startLocalSequoia('./data/sequoia');
  sequoiaUrl = local.url;
  console.log(`started a local Sequoia at ${sequoiaUrl} (data in ./data/sequoia)`);
}
await ensureTag(sequoiaUrl, tag, { token });

const pool = new pg.Pool({ connectionString: env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test', max: 10, connectionTimeoutMillis: 2000 });
// An idle connection that dies (database restart) must not crash the process; the next query reconnects.
pool.on('error', (e) => console.error(`idle PostgreSQL connection lost: ${e.message}`));
const store = new LinkStore(pool, env.SHORTLINK_SCHEMA ?? 'shortlink');
await store.migrate();
const ids = createClient({ url: sequoiaUrl, token, tags: [tag], timeoutMs: 1000, retry: { attempts: 3, baseDelayMs: 50, maxDelayMs: 500 } });

const app = buildShortlinkApp({ store, ids, tag, codes, baseUrl: env.SHORTLINK_BASE_URL ?? `http://${host}:${port}`, logger: { level: 'info' } });
await app.listen({ host, port });
console.log(`short links on http://${host}:${port} (codes: ${codes.name}, Sequoia tag ${tag})`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await app.close();
  await ids.close();
  await pool.end();
  await local?.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());

function fail(message: string): never {
  console.error(`shortlink: ${message}`);
  process.exit(2);
}
