/**
 * The configuration table of docs/configuration.md, made from FIELDS: the
 * field, flag, environment variable and default come from the field table
 * itself; the manual's longer meaning (with links) is kept here, one entry
 * per field, so a field added without its documentation fails to compile.
 * `npm run docs:config` writes the table into the page; test/docs.test.ts
 * fails while the page and this table differ.
 */
import { FIELDS, type FieldName } from './config.js';
import { WORKER_ID_PROVIDER_SPECS } from './worker-id-provider-spec.js';

interface FieldManual {
  /** Markdown; links are relative to docs/. */
  readonly meaning: string;
  /** When the default needs words: otherwise the field table's default, or "none". */
  readonly default?: string;
}

const MANUAL: Record<FieldName, FieldManual> = {
  host: { meaning: 'address to listen on' },
  port: { meaning: 'TCP port; 0 picks a free one (the log line `listening` has the URL)' },
  store: { meaning: 'store URL, see below' },
  stateDir: {
    meaning:
      "local state, one per server (all its workers share it): the rollback guard's high-water marks and the last snowflake ticks, in `state.db`; keep it on a persistent disk",
  },
  adminToken: {
    meaning:
      'bearer token for the admin routes (at least 8 characters; never logged or echoed). Required when `host` is beyond loopback (anything but `localhost`, 127.0.0.0/8 and `::1`): without it `serve` exits 2, unless `allowOpenAdmin`. See [security](security.md#listening-beyond-loopback)',
  },
  allowOpenAdmin: {
    meaning:
      'the explicit opt-out: listen beyond loopback without an admin token, the admin routes (tag create, update, delete, fence) open to anyone who reaches the port; `serve` logs a warning at start. `true` or `false`; the flag alone is `true`',
  },
  logLevel: { meaning: 'pino level: fatal, error, warn, info, debug, trace, silent' },
  maxStep: { meaning: 'cap of the dynamic step' },
  refreshIntervalMs: { meaning: 'how often the tag list is re-read; 0 never' },
  ledgerRetentionDays: {
    meaning:
      'how long the range ledger keeps a row (every range a server took, given back or fenced: see [audit.md](audit.md)), deleted in batches of 500 about once an hour off the allocation path; and the worker-id lease ledger (every grant, renewal, takeover and release, for `sequoia explain --store` and `sequoia audit --layout --store`), pruned in small batches after a renewal, never inside one. See [audit](audit.md#snowflake-ids-and-the-lease-ledger)',
  },
  loadTimeoutMs: { meaning: 'how long a request waits for the store when both ranges are empty' },
  formats: {
    meaning:
      'named business-number formats, a JSON object (see [Business numbers](ids.md#business-numbers)); they hold keys, so prefer the config file or the environment to a flag',
  },
  adminTokenFile: { meaning: 'read the admin token from a file (keeps it out of `ps` and the environment)' },
  clientTokens: {
    meaning:
      'per-tag client tokens, JSON `[{"token":"…","tags":["order","pay"],"name":"orders"}]` (`"*"` for all tags; tokens ≥ 16 characters; `name`, default `client-<position>`, is the client\'s rate-limit identity); when set, every ID route needs a token',
  },
  clientTokensFile: { meaning: 'the same JSON from a file' },
  metricsToken: {
    meaning:
      'bearer token that reads `/metrics` and the tags of `/v1/status` (as the admin token does), and nothing else; ≥ 16 characters. See [security](security.md#who-needs-which-token)',
  },
  metricsTokenFile: { meaning: 'read the metrics token from a file (a mounted secret: keeps it out of `ps` and the environment)' },
  trustedProxies: {
    meaning:
      'proxies (addresses, CIDR ranges, `loopback`, comma-separated) whose `X-Forwarded-For` names the client for rate limits; unset: the peer address. See [security](security.md#what-the-rate-limit-keys-on)',
  },
  rateLimit: {
    default: '`0` (off)',
    meaning:
      "requests per second per client (a configured token's name, else the peer address), a token bucket; over it: 429 `RATE_LIMITED` with `Retry-After`",
  },
  rateLimitBurst: { default: '2 × `rateLimit`', meaning: 'bucket size' },
  tlsCert: { meaning: 'PEM certificate file; with `tlsKey`, the server speaks HTTPS' },
  tlsKey: { meaning: 'PEM private key file' },
  requestTimeoutMs: { meaning: 'a request that takes longer gets 408 and its connection is closed' },
  maxHeaderBytes: { meaning: 'largest request head accepted (431 beyond); bodies are limited to 16 KiB (413)' },
  maxConnections: {
    meaning:
      'open connections a server process keeps (each worker of `--workers N`); a connection beyond it is answered 429 `RATE_LIMITED` at once, before its request is read, and closed. The process lowers it to its open-file limit (`ulimit -n`) minus 96 when that is smaller (64 descriptors for stores and logs, 32 for those answers), so a flood is refused instead of exhausting descriptors ([Connection floods](operations.md#connection-floods))',
  },
  maxConnectionsPerAddress: {
    meaning:
      'open connections one client address may keep per server process; beyond it the new connection is answered 429 `RATE_LIMITED` at once and closed. Behind a load balancer or proxy every connection comes from its address: raise it, or set 0 (no limit)',
  },
  shutdownTimeoutMs: { meaning: 'how long SIGTERM waits for in-flight requests' },
  drainDelayMs: {
    meaning:
      'after SIGTERM, how long the server keeps answering before it stops accepting: `/readyz` answers 503 and every answer carries `sequoia-draining: 1`, so load balancers and the SDK move away first; see [Rolling restarts](operations.md#rolling-restarts)',
  },
  workers: {
    meaning:
      'server processes sharing the port (node:cluster): `1` runs one process (IDs of a tag increase), `N` or `auto` (one per CPU core) run N workers that interleave like N servers; see [Multi-core](operations.md#multi-core)',
  },
  strictTags: {
    meaning:
      'tags served strictly increasing across all servers, one store write per batch of concurrent requests (comma-separated, or a JSON array in the file); see [Strict tags](operations.md#strict-tags-and-their-price)',
  },
  snowflakeLayout: {
    meaning:
      'default snowflake layout (of `/api/snowflake/get/{tag}` and requests without `layout`): a preset or one of `layouts` (a lineage too), see [Snowflake IDs](snowflake.md)',
  },
  layouts: {
    meaning:
      'custom snowflake layouts by name, a JSON object (best in the config file), usable wherever a preset is: see [Custom layouts](snowflake.md#custom-layouts); an entry `{"lineage":[{"layout":"twitter"},{"layout":"orders-2027","from":"2027-01-01T00:00:00Z"}]}` is a lineage, layouts that change at cutovers: see [Changing a layout](ids.md#changing-a-layout)',
  },
  workerIdProvider: { meaning: `where snowflake worker ids come from: ${WORKER_ID_PROVIDER_SPECS}` },
  fallbackTags: {
    meaning:
      "tags with a fallback space: IDs from 2^62 that a client issues under a leased worker id when no server answers and its reserve is spent; the tags' segment IDs are refused past 2^62 (comma-separated, or a JSON array in the file); see [Fallback space](operations.md#fallback-space)",
  },
  fallbackLeaseTtlMs: {
    meaning:
      'fallback worker-id lease length: the longest a client issues fallback IDs without a server (it stops a tenth of it early); clients renew every third of it while servers answer',
  },
  workerLeaseTtlMs: { meaning: 'worker-id lease length; renewed every third of it; issuing stops before it could have expired' },
  clockPolicy: { meaning: 'when the clock goes back: `reject`, `wait`, `logical`, `backup-worker`' },
  clockMaxWaitMs: { meaning: 'largest step back the `wait` policy waits out' },
};

export const TABLE_START = '<!-- fields: generated by `npm run docs:config` from src/app/config-docs.ts -->';
export const TABLE_END = '<!-- /fields -->';

/** The Markdown table of every field, in FIELDS order. */
export function configurationTable(): string {
  const rows = (Object.keys(FIELDS) as FieldName[]).map((name) => {
    const f = FIELDS[name];
    const m = MANUAL[name];
    const fallback = f.default === undefined ? 'none' : `\`${String(f.default)}\``;
    return `| \`${name}\` | \`${f.flag}\` | \`${f.env}\` | ${m.default ?? fallback} | ${m.meaning} |`;
  });
  return ['| field (config file) | flag | environment | default | meaning |', '| --- | --- | --- | --- | --- |', ...rows].join('\n');
}

/** `page` with the text between the markers replaced by the table (throws when a marker is missing). */
export function withConfigurationTable(page: string): string {
  const a = page.indexOf(TABLE_START);
  const b = page.indexOf(TABLE_END);
  if (a < 0 || b < a) throw new Error(`the page needs the markers ${TABLE_START} and ${TABLE_END}`);
  return `${page.slice(0, a + TABLE_START.length)}\n${configurationTable()}\n${page.slice(b)}`;
}
