/**
 * Server configuration: flags beat environment (SEQUOIA_*) beat the config
 * file (JSON, camelCase keys) beat defaults. Every field is validated on its
 * own, so each bad field gets one message naming the field and where its
 * value came from.
 */
import { readFileSync } from 'node:fs';
import proxyaddr from '@fastify/proxy-addr';
import * as z from 'zod/mini';
import { DEFAULT_STATE_DIR, DEFAULT_STORE_URL } from './defaults.js';
import { type BusinessNumberFormat, validateBusinessNumberFormat } from '../core/business-number/index.js';
import { InvalidArgumentError } from '../core/errors.js';
import { DEFAULT_LAYOUT, PRESETS, defineLayouts } from '../core/snowflake/layout.js';
import { TAG_PATTERN, TAG_RULE, isValidTag } from '../core/tag.js';
import { LAYOUT_NAME } from '../core/request-rules.js';
import { type WorkerIdProviderSpec, parseWorkerIdProvider } from './worker-id-provider-spec.js';
import { isLoopbackHost } from '../server/listen-check.js';
import { redactStoreUrl } from './stores.js';
import { inEnglish } from '../server/zod-english.js';

/** `fn` turns the raw value (a flag's or the environment's text) into what `schema` checks. */
const preprocess = <S extends z.ZodMiniType>(fn: (v: unknown) => unknown, schema: S) => z.pipe(z.transform(fn), schema);

const intFrom = (min: number, max: number) =>
  preprocess(
    (v) => (typeof v === 'string' && /^[0-9]+$/.test(v.trim()) ? Number(v.trim()) : v),
    z
      .number({ error: `must be an integer from ${min} to ${max}` })
      .check(
        z.int(`must be an integer from ${min} to ${max}`),
        z.minimum(min, `must be at least ${min}`),
        z.maximum(max, `must be at most ${max}`),
      ),
  );

/** Named business-number formats: a JSON object (or its text, from a flag or the environment). */
const formatsSchema = preprocess(
  (v) => {
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v) as unknown;
    } catch {
      return v;
    }
  },
  z.pipe(
    z
      .record(z.string().check(z.regex(/^[A-Za-z0-9_.-]{1,64}$/, 'names are 1-64 letters, digits, _ . -')), z.unknown(), {
        error: 'must be a JSON object of name → format',
      })
      .check(
        z.superRefine((rec, ctx) => {
          for (const [name, f] of Object.entries(rec)) {
            try {
              validateBusinessNumberFormat(f, `formats.${name}`);
            } catch (e) {
              ctx.addIssue({ code: 'custom', message: e instanceof Error ? e.message : String(e) });
            }
          }
        }),
      ),
    // Each entry was just validated as a format.
    z.transform((rec: Record<string, unknown>) => rec as Record<string, BusinessNumberFormat>),
  ),
);

/** A flag or environment value `a, b,c` as a list; a JSON array from a file stays as it is. */
const commaSeparated = (v: unknown): unknown =>
  typeof v === 'string'
    ? v
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t !== '')
    : v;

/** A list of tags: a JSON array, or a comma-separated string (flag, env). */
const tagList = preprocess(
  commaSeparated,
  z.array(z.string().check(z.regex(TAG_PATTERN, `each tag ${TAG_RULE}`)), {
    error: 'must be a list of tags (comma-separated, or a JSON array)',
  }),
);

const jsonText = (v: unknown): unknown => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
};

/** Custom snowflake layouts, by name: validated like the presets (see `defineLayouts`). */
const layoutsSchema = preprocess(
  jsonText,
  z.record(z.string(), z.unknown(), { error: 'must be a JSON object of name → layout' }).check(
    z.superRefine((rec, ctx) => {
      try {
        defineLayouts(rec);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: e instanceof Error ? e.message : String(e) });
      }
    }),
  ),
);

/**
 * Client tokens: `[{"token":"…","tags":["order","pay"],"name":"orders"}]`; `"*"` grants every tag.
 * The name (default `client-<position>`) is the client's rate-limit identity.
 */
export const clientTokensSchema = preprocess(
  jsonText,
  z
    .array(
      z.strictObject({
        token: z
          .string()
          .check(
            z.minLength(16, 'each token must be at least 16 characters'),
            z.regex(/^[\x21-\x7e]+$/, 'tokens are printable ASCII without spaces'),
          ),
        tags: z
          .array(z.string().check(z.refine((t) => t === '*' || isValidTag(t), `tags must be "*" or tag names: each ${TAG_RULE}`)))
          .check(z.minLength(1, 'give at least one tag')),
        name: z.optional(z.string().check(z.regex(/^[A-Za-z0-9_.-]{1,64}$/, 'names are 1-64 letters, digits, _ . -'))),
      }),
      { error: 'must be a JSON array of {"token":"…","tags":["…"],"name":"…"}' },
    )
    .check(
      z.superRefine((list, ctx) => {
        const names = list.map((c, i) => c.name ?? `client-${i + 1}`);
        const dup = names.find((n, i) => names.indexOf(n) !== i);
        if (dup !== undefined) ctx.addIssue({ code: 'custom', message: `two tokens share the name ${dup}; each client needs its own` });
        const tokens = list.map((c) => c.token);
        if (new Set(tokens).size !== tokens.length) ctx.addIssue({ code: 'custom', message: 'a token is listed twice' });
      }),
    ),
);

/** A worker-id provider spec: parsed by the one grammar (worker-id-provider-spec.ts); the message names the grammar. */
const workerIdProviderSchema = z.string().check(
  z.superRefine((spec, ctx) => {
    try {
      parseWorkerIdProvider(spec);
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: e instanceof Error ? e.message : String(e) });
    }
  }),
);

/** Trusted proxies: addresses, CIDR ranges or `loopback`, `linklocal`, `uniquelocal` (comma-separated or a JSON array). */
const proxyList = preprocess(
  commaSeparated,
  z.array(z.string(), { error: 'must be a list of addresses or CIDR ranges (comma-separated, or a JSON array)' }).check(
    z.superRefine((list, ctx) => {
      try {
        proxyaddr.compile(list);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: e instanceof Error ? e.message : String(e) });
      }
    }),
  ),
);

const filePath = z.string().check(z.minLength(1, 'must not be empty'));

/** `auto` (one per core) is kept as 0; N from 1. A 0 given is refused, not taken for `auto`: it would drop the one-process order unasked. */
const auto = z.pipe(
  z.literal('auto'),
  z.transform((): number => 0),
);
const workersSchema = z.union([auto, intFrom(1, 256)], { error: 'must be auto or an integer from 1 to 256' });

/**
 * An on/off setting: `true`/`false` (also `1`/`0`, `yes`/`no`) from the environment or a
 * flag's value, a JSON boolean from the file; a flag given bare is `true` (cli/main.ts).
 */
const switchSchema = preprocess(
  (v) => {
    if (typeof v !== 'string') return v;
    const t = v.trim().toLowerCase();
    return ['true', '1', 'yes'].includes(t) ? true : ['false', '0', 'no'].includes(t) ? false : v;
  },
  z.boolean({ error: 'must be true or false' }),
);

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const FIELDS = {
  host: {
    schema: z.string().check(z.minLength(1, 'must not be empty')),
    default: '127.0.0.1',
    env: 'SEQUOIA_HOST',
    flag: '--host',
    doc: 'address to listen on',
  },
  port: { schema: intFrom(0, 65535), default: 8080, env: 'SEQUOIA_PORT', flag: '--port', doc: 'TCP port (0 picks a free one)' },
  store: {
    schema: z.string().check(z.minLength(1, 'must not be empty')),
    default: DEFAULT_STORE_URL,
    env: 'SEQUOIA_STORE',
    flag: '--store',
    doc: 'store URL: sqlite:PATH, postgres://…, mysql://…, redis://…, or several comma-separated',
  },
  stateDir: {
    schema: z.string().check(z.minLength(1, 'must not be empty')),
    default: DEFAULT_STATE_DIR,
    env: 'SEQUOIA_STATE_DIR',
    flag: '--state-dir',
    doc: 'local state directory (high-water marks)',
  },
  adminToken: {
    schema: z.optional(z.string().check(z.minLength(8, 'must be at least 8 characters'))),
    default: undefined,
    env: 'SEQUOIA_ADMIN_TOKEN',
    flag: '--admin-token',
    doc: 'bearer token for the admin routes; required to listen beyond loopback (or --allow-open-admin)',
  },
  allowOpenAdmin: {
    schema: switchSchema,
    default: false,
    env: 'SEQUOIA_ALLOW_OPEN_ADMIN',
    flag: '--allow-open-admin',
    doc: 'listen beyond loopback without an admin token, the admin routes open to anyone who reaches the port (logged as a warning)',
  },
  logLevel: {
    schema: z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }),
    default: 'info',
    env: 'SEQUOIA_LOG_LEVEL',
    flag: '--log-level',
    doc: 'pino log level',
  },
  maxStep: {
    schema: intFrom(1, 2_000_000_000),
    default: 1_000_000,
    env: 'SEQUOIA_MAX_STEP',
    flag: '--max-step',
    doc: 'cap of the dynamic step',
  },
  refreshIntervalMs: {
    schema: intFrom(0, 86_400_000),
    default: 60_000,
    env: 'SEQUOIA_REFRESH_INTERVAL_MS',
    flag: '--refresh-interval-ms',
    doc: 'how often the tag list is re-read (0: never)',
  },
  ledgerRetentionDays: {
    schema: intFrom(1, 36_500),
    default: 90,
    env: 'SEQUOIA_LEDGER_RETENTION_DAYS',
    flag: '--ledger-retention-days',
    doc: 'days the range ledger and the worker-id lease ledger keep a row; older rows are pruned in small batches',
  },
  loadTimeoutMs: {
    schema: intFrom(1, 600_000),
    default: 3000,
    env: 'SEQUOIA_LOAD_TIMEOUT_MS',
    flag: '--load-timeout-ms',
    doc: 'how long a request waits for the store when both segments are empty',
  },
  formats: {
    schema: z.optional(formatsSchema),
    default: undefined,
    env: 'SEQUOIA_FORMATS',
    flag: '--formats',
    doc: 'named business-number formats, JSON {"order":{"kind":"permuted-base32",…}}; holds keys: prefer the config file or env',
  },
  adminTokenFile: {
    schema: z.optional(filePath),
    default: undefined,
    env: 'SEQUOIA_ADMIN_TOKEN_FILE',
    flag: '--admin-token-file',
    doc: 'read the admin token from this file instead',
  },
  clientTokens: {
    schema: z.optional(clientTokensSchema),
    default: undefined,
    env: 'SEQUOIA_CLIENT_TOKENS',
    flag: '--client-tokens',
    doc: 'per-tag client tokens, JSON [{"token":"…","tags":["order"]}]; when set, ID routes need a token',
  },
  clientTokensFile: {
    schema: z.optional(filePath),
    default: undefined,
    env: 'SEQUOIA_CLIENT_TOKENS_FILE',
    flag: '--client-tokens-file',
    doc: 'read the client tokens (same JSON) from this file',
  },
  metricsToken: {
    schema: z.optional(
      z
        .string()
        .check(z.minLength(16, 'must be at least 16 characters'), z.regex(/^[\x21-\x7e]+$/, 'tokens are printable ASCII without spaces')),
    ),
    default: undefined,
    env: 'SEQUOIA_METRICS_TOKEN',
    flag: '--metrics-token',
    doc: 'bearer token that reads /metrics and tag-level /v1/status (as the admin token does), nothing else',
  },
  metricsTokenFile: {
    schema: z.optional(filePath),
    default: undefined,
    env: 'SEQUOIA_METRICS_TOKEN_FILE',
    flag: '--metrics-token-file',
    doc: 'read the metrics token from this file instead',
  },
  trustedProxies: {
    schema: z.optional(proxyList),
    default: undefined,
    env: 'SEQUOIA_TRUSTED_PROXIES',
    flag: '--trusted-proxies',
    doc: 'proxies (addresses, CIDR ranges, loopback) whose X-Forwarded-For names the client for rate limits; unset: the peer address',
  },
  rateLimit: {
    schema: intFrom(0, 10_000_000),
    default: 0,
    env: 'SEQUOIA_RATE_LIMIT',
    flag: '--rate-limit',
    doc: 'requests per second per client (token or address); 0 turns the limit off',
  },
  rateLimitBurst: {
    schema: z.optional(intFrom(1, 10_000_000)),
    default: undefined,
    env: 'SEQUOIA_RATE_LIMIT_BURST',
    flag: '--rate-limit-burst',
    doc: 'bucket size: requests a client may send at once (default 2 × rate-limit)',
  },
  tlsCert: {
    schema: z.optional(filePath),
    default: undefined,
    env: 'SEQUOIA_TLS_CERT',
    flag: '--tls-cert',
    doc: 'PEM certificate file: serve HTTPS (with --tls-key)',
  },
  tlsKey: { schema: z.optional(filePath), default: undefined, env: 'SEQUOIA_TLS_KEY', flag: '--tls-key', doc: 'PEM private key file' },
  requestTimeoutMs: {
    schema: intFrom(1000, 600_000),
    default: 30_000,
    env: 'SEQUOIA_REQUEST_TIMEOUT_MS',
    flag: '--request-timeout-ms',
    doc: 'a request that takes longer is answered 408',
  },
  maxHeaderBytes: {
    schema: intFrom(1024, 1_048_576),
    default: 16_384,
    env: 'SEQUOIA_MAX_HEADER_BYTES',
    flag: '--max-header-bytes',
    doc: 'largest request head accepted (431 beyond)',
  },
  maxConnections: {
    schema: intFrom(1, 1_000_000),
    default: 10_000,
    env: 'SEQUOIA_MAX_CONNECTIONS',
    flag: '--max-connections',
    doc: 'open connections per server process; more are answered 429 and closed at once (kept below the open-file limit)',
  },
  maxConnectionsPerAddress: {
    schema: intFrom(0, 1_000_000),
    default: 1000,
    env: 'SEQUOIA_MAX_CONNECTIONS_PER_ADDRESS',
    flag: '--max-connections-per-address',
    doc: 'open connections per client address and server process; more are answered 429 and closed at once (0: no limit)',
  },
  shutdownTimeoutMs: {
    schema: intFrom(0, 600_000),
    default: 10_000,
    env: 'SEQUOIA_SHUTDOWN_TIMEOUT_MS',
    flag: '--shutdown-timeout-ms',
    doc: 'how long SIGTERM waits for in-flight requests',
  },
  drainDelayMs: {
    schema: intFrom(0, 600_000),
    default: 0,
    env: 'SEQUOIA_DRAIN_DELAY_MS',
    flag: '--drain-delay-ms',
    doc: 'after SIGTERM, how long the server keeps answering (marked draining, /readyz 503) before it stops accepting',
  },
  workers: {
    schema: workersSchema,
    default: 1,
    env: 'SEQUOIA_WORKERS',
    flag: '--workers',
    doc: 'server processes sharing the port (node:cluster): 1 (one process: IDs of a tag increase), N, or auto (one per CPU core); N workers interleave like N servers',
  },
  strictTags: {
    schema: z.optional(tagList),
    default: undefined,
    env: 'SEQUOIA_STRICT_TAGS',
    flag: '--strict-tags',
    doc: 'tags served strictly increasing across servers, one store write per batch of concurrent requests (comma-separated)',
  },
  fallbackTags: {
    schema: z.optional(tagList),
    default: undefined,
    env: 'SEQUOIA_FALLBACK_TAGS',
    flag: '--fallback-tags',
    doc: 'tags with a fallback space (IDs from 2^62) that clients fill when no server answers; their segment IDs stay below 2^62 (comma-separated)',
  },
  fallbackLeaseTtlMs: {
    schema: intFrom(10_000, 86_400_000),
    default: 900_000,
    env: 'SEQUOIA_FALLBACK_LEASE_TTL_MS',
    flag: '--fallback-lease-ttl-ms',
    doc: 'fallback worker-id lease length: how long a client may fill the fallback space without a server',
  },
  snowflakeLayout: {
    schema: z.string().check(z.regex(LAYOUT_NAME, `must be a layout name: ${[...PRESETS.keys()].join(', ')} or one from layouts`)),
    default: DEFAULT_LAYOUT,
    env: 'SEQUOIA_SNOWFLAKE_LAYOUT',
    flag: '--snowflake-layout',
    doc: 'default snowflake layout (of /api/snowflake/get and requests without layout)',
  },
  layouts: {
    schema: z.optional(layoutsSchema),
    default: undefined,
    env: 'SEQUOIA_LAYOUTS',
    flag: '--layouts',
    doc: 'custom snowflake layouts, JSON {"discord":{"epochMs":1420070400000,"timeBits":42,"fields":[…]}}; best in the config file',
  },
  workerIdProvider: {
    schema: workerIdProviderSchema,
    default: 'lease',
    env: 'SEQUOIA_WORKER_ID_PROVIDER',
    flag: '--worker-id-provider',
    doc: 'where snowflake worker ids come from (lease: leased from the store)',
  },
  workerLeaseTtlMs: {
    schema: intFrom(300, 600_000),
    default: 10_000,
    env: 'SEQUOIA_WORKER_LEASE_TTL_MS',
    flag: '--worker-lease-ttl-ms',
    doc: 'worker-id lease length; renewed every third of it',
  },
  clockPolicy: {
    schema: z.enum(['reject', 'wait', 'logical', 'backup-worker'], { error: 'must be reject, wait, logical or backup-worker' }),
    default: 'wait',
    env: 'SEQUOIA_CLOCK_POLICY',
    flag: '--clock-policy',
    doc: 'what snowflake does when the clock goes back',
  },
  clockMaxWaitMs: {
    schema: intFrom(0, 60_000),
    default: 1000,
    env: 'SEQUOIA_CLOCK_MAX_WAIT_MS',
    flag: '--clock-max-wait-ms',
    doc: 'largest clock step back the wait policy waits out',
  },
} as const;

export type FieldName = keyof typeof FIELDS;

/**
 * The resolved configuration: one field per entry of FIELDS, typed by its
 * schema's output, plus the slot the cluster primary gives each worker's copy.
 */
export type ServeConfig = { [K in FieldName]: z.output<(typeof FIELDS)[K]['schema']> } & {
  /** Set by the cluster primary in each worker's copy: the worker's slot (0..N-1). */
  workerSlot?: number | undefined;
};

/** Bad configuration: one message per field. */
export class ConfigError extends InvalidArgumentError {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export function resolveConfig(
  flags: Partial<Record<FieldName, unknown>>,
  env: NodeJS.ProcessEnv,
  configFile: string | undefined,
): ServeConfig {
  return resolveConfigSources(flags, env, configFile).config;
}

/** `resolveConfig`, and the fields that took their default: no flag, environment variable or config file gave them. */
export function resolveConfigSources(
  flags: Partial<Record<FieldName, unknown>>,
  env: NodeJS.ProcessEnv,
  configFile: string | undefined,
): { config: ServeConfig; defaulted: ReadonlySet<FieldName> } {
  const defaulted = new Set<FieldName>();
  const problems: string[] = [];
  let file: Record<string, unknown> = {};
  const path = configFile ?? env.SEQUOIA_CONFIG;
  if (path) {
    try {
      const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the file must hold a JSON object');
      file = parsed as Record<string, unknown>;
      for (const key of Object.keys(file)) {
        if (!Object.hasOwn(FIELDS, key)) problems.push(`${key} (from ${path}): unknown field; known: ${Object.keys(FIELDS).join(', ')}`);
      }
    } catch (e) {
      throw new ConfigError([`config (${path}): cannot read: ${e instanceof Error ? e.message : String(e)}`]);
    }
  }
  const out: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(FIELDS) as [FieldName, (typeof FIELDS)[FieldName]][]) {
    let value: unknown = f.default;
    let source = 'default';
    if (Object.hasOwn(file, name)) {
      value = file[name];
      source = path as string;
    }
    if (env[f.env] !== undefined && env[f.env] !== '') {
      value = env[f.env];
      source = f.env;
    }
    if (flags[name] !== undefined) {
      value = flags[name];
      source = f.flag;
    }
    if (source === 'default') defaulted.add(name);
    const r = (f.schema as z.ZodMiniType).safeParse(value, inEnglish);
    if (r.success) out[name] = r.data;
    else {
      const shown =
        name === 'adminToken' || name === 'formats' || name === 'clientTokens' || name === 'metricsToken'
          ? ''
          : `, got ${JSON.stringify(typeof value === 'string' ? redactStoreUrl(value) : value)}`; // never echo a secret (nor a URL's password)
      problems.push(`${name} (from ${source}): ${r.error.issues[0]?.message ?? 'invalid'}${shown}`);
    }
  }
  if (problems.length === 0) problems.push(...crossFieldProblems(out));
  if (problems.length === 0) readSecretFiles(out, problems);
  if (problems.length) throw new ConfigError(problems);
  return { config: out as ServeConfig, defaulted };
}

/**
 * The rules that span fields, checked once every field is valid on its own:
 * each issue's path is the field to change (the message names it).
 */
const crossFieldRules = z.record(z.string(), z.unknown()).check(
  z.superRefine((c, ctx) => {
    const problem = (field: FieldName, message: string): void => void ctx.addIssue({ code: 'custom', path: [field], message });
    if (c.adminTokenFile !== undefined && c.adminToken !== undefined)
      problem('adminTokenFile', 'give either adminToken or adminTokenFile, not both');
    if (c.metricsTokenFile !== undefined && c.metricsToken !== undefined)
      problem('metricsTokenFile', 'give either metricsToken or metricsTokenFile, not both');
    if (c.clientTokensFile !== undefined && c.clientTokens !== undefined)
      problem('clientTokensFile', 'give either clientTokens or clientTokensFile, not both');
    const provider = typeof c.workerIdProvider === 'string' ? parsedOrUndefined(c.workerIdProvider) : undefined;
    if (provider && c.workers !== 1) {
      // One id per server, but N processes would each issue on it: the same (tick, id, sequence) N times.
      if (provider.kind === 'static') {
        problem(
          'workerIdProvider',
          'static:N would give every worker process the same snowflake worker id; use --workers 1, or the lease or zookeeper provider (one id per worker)',
        );
      } else if (provider.kind === 'zookeeper' && provider.zookeeper.leafName !== undefined) {
        problem(
          'workerIdProvider',
          'zookeeper leaf=NAME names one Leaf node per {ip}:{port}, so every worker process of the port would share its worker id; use --workers 1',
        );
      } else if (provider.kind === 'k8s-ordinal') {
        problem(
          'workerIdProvider',
          'k8s-ordinal would give every worker process of the pod the same snowflake worker id; use --workers 1 (scale with StatefulSet replicas), or the lease or zookeeper provider (one id per worker)',
        );
      }
    }
    if (typeof c.snowflakeLayout === 'string' && !PRESETS.has(c.snowflakeLayout)) {
      const custom = c.layouts as Record<string, unknown> | undefined;
      if (!custom || !Object.hasOwn(custom, c.snowflakeLayout)) {
        problem(
          'snowflakeLayout',
          `no layout ${JSON.stringify(c.snowflakeLayout)}; known: ${[...PRESETS.keys(), ...Object.keys(custom ?? {})].join(', ')}`,
        );
      }
    }
    if (c.tlsCert !== undefined && c.tlsKey === undefined) problem('tlsKey', 'tlsCert is set: give the key too (both or neither)');
    if (c.tlsKey !== undefined && c.tlsCert === undefined) problem('tlsCert', 'tlsKey is set: give the certificate too (both or neither)');
  }),
);

function crossFieldProblems(out: Record<string, unknown>): string[] {
  const r = crossFieldRules.safeParse(out, inEnglish);
  return r.success ? [] : r.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`);
}

/** Secrets and certificates that come from files: read once the fields and their rules hold. */
function readSecretFiles(out: Record<string, unknown>, problems: string[]): void {
  const read = (field: string, path: string): string | undefined => {
    try {
      return readFileSync(path, 'utf8');
    } catch (e) {
      problems.push(`${field}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
      return undefined;
    }
  };
  if (typeof out.adminTokenFile === 'string') {
    const text = read('adminTokenFile', out.adminTokenFile)?.trim();
    if (text !== undefined) {
      if (text.length < 8) problems.push('adminTokenFile: the token must be at least 8 characters');
      else out.adminToken = text;
    }
  }
  if (typeof out.metricsTokenFile === 'string') {
    const text = read('metricsTokenFile', out.metricsTokenFile)?.trim();
    if (text !== undefined) {
      const r = FIELDS.metricsToken.schema.safeParse(text, inEnglish);
      if (r.success) out.metricsToken = r.data;
      else problems.push(`metricsTokenFile: ${r.error.issues[0]?.message ?? 'invalid'}`);
    }
  }
  if (typeof out.clientTokensFile === 'string') {
    const text = read('clientTokensFile', out.clientTokensFile);
    if (text !== undefined) {
      const r = clientTokensSchema.safeParse(text, inEnglish);
      if (r.success) out.clientTokens = r.data;
      else problems.push(`clientTokensFile: ${r.error.issues[0]?.message ?? 'invalid'}`);
    }
  }
  if (typeof out.tlsCert === 'string') read('tlsCert', out.tlsCert);
  if (typeof out.tlsKey === 'string') read('tlsKey', out.tlsKey);
}

/**
 * DESIGN.md "Safe as shipped": a server listening beyond loopback without an
 * admin token refuses to start (a ConfigError: exit 2) unless
 * `allowOpenAdmin` says so explicitly. Asked by serve only (start-server.ts,
 * the cluster primary), before the port is bound or anything is leased: the
 * admin commands read the same environment and listen on nothing. Answers
 * the warning to log when the server runs open on purpose.
 */
export function checkAdminExposure(config: Pick<ServeConfig, 'host' | 'adminToken' | 'allowOpenAdmin'>): string | undefined {
  if (config.adminToken !== undefined || isLoopbackHost(config.host)) return undefined;
  const { adminToken, adminTokenFile, allowOpenAdmin, host } = FIELDS;
  if (config.allowOpenAdmin) {
    return `listening on ${config.host}, beyond loopback, without an admin token (${allowOpenAdmin.flag}): anyone who reaches the port may create, change and delete tags and fence them`;
  }
  throw new ConfigError([
    `adminToken: serve would listen on ${config.host}, beyond loopback, without an admin token, so anyone who reaches the port could create, change and delete tags and fence them. ` +
      `Give ${adminToken.flag} (env ${adminToken.env}) or ${adminTokenFile.flag} (env ${adminTokenFile.env}); ` +
      `or listen on 127.0.0.1 (${host.flag}, env ${host.env}); ` +
      `or, to run open on purpose, ${allowOpenAdmin.flag} (env ${allowOpenAdmin.env}=true)`,
  ]);
}

/** The parsed spec, or undefined when it is malformed (the schema has already said why). */
function parsedOrUndefined(spec: string): WorkerIdProviderSpec | undefined {
  try {
    return parseWorkerIdProvider(spec);
  } catch {
    return undefined;
  }
}
