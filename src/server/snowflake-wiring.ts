/**
 * Builds the server's SnowflakeService from the serve configuration: the
 * worker-id provider on the configured store (out of the box: a lease on it),
 * the default layout and the clock policy. Undefined (snowflake routes answer
 * NOT_FOUND) only when the default provider meets a store that cannot hold
 * leases (redis); an explicit provider that cannot work is a config error.
 */
import { createWorkerIdProvider } from '../adapters/create-worker-id-provider.js';
import { InvalidArgumentError } from '../core/errors.js';
import { defineLayouts } from '../core/snowflake/layout.js';
import type { Logger } from '../ports/logger.js';
import { SnowflakeService } from '../service/snowflake-service.js';

export interface SnowflakeConfig {
  readonly store: string;
  readonly stateDir?: string;
  /** The cluster worker's slot, when this process is one of `--workers N`. */
  readonly workerSlot?: number | undefined;
  readonly port?: number;
  readonly snowflakeLayout: string;
  readonly workerIdProvider: string;
  readonly workerLeaseTtlMs: number;
  readonly clockPolicy: 'reject' | 'wait' | 'logical' | 'backup-worker';
  readonly clockMaxWaitMs: number;
  /** Custom layouts as configured (validated again here: `defineLayouts`). */
  readonly layouts?: Record<string, unknown> | undefined;
}

export function createSnowflakeService(config: SnowflakeConfig, logger: Logger): SnowflakeService | undefined {
  let provider;
  try {
    provider = createWorkerIdProvider(config.workerIdProvider, config.store, {
      ttlMs: config.workerLeaseTtlMs,
      stateDir: config.stateDir,
      workerSlot: config.workerSlot,
      port: config.port,
      logger,
    });
  } catch (e) {
    if (e instanceof InvalidArgumentError && config.workerIdProvider === 'lease') {
      logger.warn({ reason: e.message }, 'snowflake IDs disabled: set --worker-id-provider');
      return undefined;
    }
    throw e;
  }
  const layouts = defineLayouts(config.layouts);
  // Said once at start, as `sequoia plan --layout` says it: 2^53, the sign bit, a short lifetime.
  for (const l of layouts.values()) for (const warning of l.warnings) logger.warn({ layout: l.name, warning }, 'custom snowflake layout');
  return new SnowflakeService({
    provider,
    defaultLayout: config.snowflakeLayout,
    layouts,
    clockPolicy: config.clockPolicy,
    maxWaitMs: config.clockMaxWaitMs,
    logger,
  });
}
