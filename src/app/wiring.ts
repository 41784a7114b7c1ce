/**
 * The wiring: services from configuration, one function each, used by
 * `serve`, every CLI command and the benchmarks. The store URL is parsed once
 * (`openBackend`) and its backend shared by the segment service and the
 * worker-id provider.
 */
import { MemoryHighWaterMarkStore } from '../adapters/memory/memory-high-water-mark-store.js';
import { StateDir } from '../adapters/state-dir/state-dir.js';
import { InvalidArgumentError } from '../core/errors.js';
import { defineLayouts } from '../core/snowflake/layout.js';
import type { TickRecord } from '../adapters/state-dir/tick-reserving-provider.js';
import type { HighWaterMarkStore } from '../ports/high-water-mark-store.js';
import type { Logger } from '../ports/logger.js';
import { withFallbackCeiling } from '../service/fallback-leases.js';
import { IdService, type IdServiceOptions } from '../service/id-service.js';
import { SnowflakeService } from '../service/snowflake-service.js';
import type { ServeConfig } from './config.js';
import { type Backend, openBackend, storeIdentity } from './stores.js';
import { parseWorkerIdProvider } from './worker-id-provider-spec.js';
import { createWorkerIdProvider } from './worker-id-providers.js';

export interface SegmentConfig {
  readonly store: string;
  /** Where the rollback guard keeps its high-water marks; null keeps them in memory only (benchmarks, throwaway stores). */
  readonly stateDir: string | null;
  /** 0 for one-shot commands: no refresh timer. */
  readonly refreshIntervalMs?: number;
  readonly maxStep?: number;
  readonly loadTimeoutMs?: number;
  readonly strictTags?: readonly string[] | undefined;
  /** Tags with a fallback space: their segment IDs are refused from 2^62 on. */
  readonly fallbackTags?: readonly string[] | undefined;
}

export type SnowflakeConfig = Pick<
  ServeConfig,
  'snowflakeLayout' | 'workerIdProvider' | 'workerLeaseTtlMs' | 'clockPolicy' | 'clockMaxWaitMs' | 'layouts'
> & { readonly stateDir?: string; readonly port?: number; readonly workerSlot?: number | undefined; readonly ledgerRetentionDays?: number };

export function createIdService(
  config: SegmentConfig,
  backend: Backend,
  /** `marks`: the state dir already open (a server's, off the event loop); else opened here from `config.stateDir`. */
  o: { readonly logger?: Logger; readonly onLoad?: IdServiceOptions['onLoad']; readonly marks?: HighWaterMarkStore } = {},
): IdService {
  return new IdService({
    store: withFallbackCeiling(backend.segments, config.fallbackTags ?? []),
    // One state directory for the whole server: every worker of --workers N shares its marks and ticks.
    marks: o.marks ?? (config.stateDir === null ? new MemoryHighWaterMarkStore() : new StateDir(config.stateDir)),
    logger: o.logger,
    onLoad: o.onLoad,
    refreshIntervalMs: config.refreshIntervalMs,
    allocator: {
      ...(config.maxStep !== undefined ? { maxStep: config.maxStep } : {}),
      ...(config.loadTimeoutMs !== undefined ? { loadTimeoutMs: config.loadTimeoutMs } : {}),
    },
    strictTags: config.strictTags,
  });
}

/**
 * The snowflake service on the configured worker-id provider. With
 * `optional` (the server), the default provider meeting a store that cannot
 * hold leases (every built-in store can) disables snowflake IDs with a warning instead of
 * failing (the routes answer NOT_FOUND); an explicit provider that cannot
 * work is always an error.
 */
export function createSnowflakeService(
  config: SnowflakeConfig,
  backend: Backend,
  /** `ticks`: the state dir already open (a server's); else opened here from `config.stateDir`. */
  o: { readonly logger?: Logger; readonly optional?: boolean; readonly ticks?: TickRecord } = {},
): SnowflakeService | undefined {
  const spec = parseWorkerIdProvider(config.workerIdProvider);
  let provider;
  try {
    provider = createWorkerIdProvider(spec, backend.leases, {
      ttlMs: config.workerLeaseTtlMs,
      ledgerRetentionDays: config.ledgerRetentionDays,
      stateDir: config.stateDir,
      ticks: o.ticks,
      workerSlot: config.workerSlot,
      port: config.port,
      logger: o.logger,
    });
  } catch (e) {
    if (o.optional && e instanceof InvalidArgumentError && spec.kind === 'lease') {
      o.logger?.warn({ reason: e.message }, 'snowflake IDs disabled: set --worker-id-provider');
      return undefined;
    }
    throw e;
  }
  // Custom layouts, validated again here (they cross to cluster workers as plain data).
  const layouts = defineLayouts(config.layouts);
  // Said once at start, as `sequoia plan --layout` says it: 2^53, the sign bit, a short lifetime.
  for (const l of layouts.values())
    for (const warning of l.warnings) o.logger?.warn({ layout: l.name, warning }, 'custom snowflake layout');
  return new SnowflakeService({
    provider,
    defaultLayout: config.snowflakeLayout,
    layouts,
    clockPolicy: config.clockPolicy,
    maxWaitMs: config.clockMaxWaitMs,
    logger: o.logger,
  });
}

/**
 * For one-shot commands: a started service without refresh timer, closed (tails given back) after `fn`.
 * `checkStateDir` (fence, gen segment: commands that use a server's marks) holds them to the rule a server's
 * start keeps (start-server.ts): a state dir that belongs to another store is refused before the store is
 * opened, and a dir bound to none is bound to this store once it has started, before `fn` reads or writes a
 * mark or takes a range; else the marks one store's IDs left there would be read against the next store's
 * counters as a rollback, after that store's range was taken (issue 40 item 6).
 */
export async function withIdService<T>(
  config: SegmentConfig,
  fn: (s: IdService) => Promise<T>,
  o: { readonly checkStateDir?: boolean } = {},
): Promise<T> {
  const state = config.stateDir === null ? undefined : new StateDir(config.stateDir);
  try {
    if (state && o.checkStateDir) await state.bindStore(storeIdentity(config.store), false);
    const service = createIdService({ ...config, refreshIntervalMs: 0 }, await openBackend(config.store), { marks: state });
    try {
      await service.start();
      if (state && o.checkStateDir) await state.bindStore(storeIdentity(config.store), true);
      return await fn(service);
    } finally {
      await service.close();
    }
  } finally {
    await state?.close();
  }
}

/** For one-shot commands: the snowflake service on the configured provider, closed with its backend after `fn`. */
export async function withSnowflakeService<T>(
  config: SnowflakeConfig & { readonly store: string },
  fn: (s: SnowflakeService) => Promise<T>,
): Promise<T> {
  const backend = await openBackend(config.store);
  try {
    const service = createSnowflakeService(config, backend) as SnowflakeService;
    try {
      return await fn(service);
    } finally {
      await service.close();
    }
  } finally {
    await backend.segments.close();
  }
}
