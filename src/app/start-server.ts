/**
 * Wires a configured server: store, state directory, IdService, HTTP app,
 * and graceful shutdown (stop accepting, finish in-flight requests, close the
 * store) on SIGTERM/SIGINT/SIGHUP.
 */
import { readFileSync } from 'node:fs';
import { SequoiaError } from '../core/errors.js';
import type { Logger } from 'pino';
import type { Drain } from '../server/http-front.js';
import { FormatRegistry } from '../server/formats.js';
import type { SequoiaMetrics } from '../server/metrics.js';
import { FallbackLeases } from '../service/fallback-leases.js';
import type { IdService } from '../service/id-service.js';
import { VERSION } from '../version.js';
import { type PortReservation, listenError, reservePort } from '../server/listen-check.js';
import { type ServeConfig, checkAdminExposure } from './config.js';
import { stateDirProbe } from '../adapters/state-dir/state-dir-probe.js';
import { connectionCap, openFileLimit } from './fd-limit.js';
import { type StateDirPort, openStateDirOffLoop } from './off-loop.js';
import { discardWarmThreads } from '../adapters/kit/off-loop/warm.js';
import type { ServerLock } from '../adapters/state-dir/server-lock.js';
import { claimStateDir } from './state-dir-claim.js';
import { type Backend, openBackend, redactStoreUrl, storeIdentity } from './stores.js';
import { startLedgerPruner } from './ledger-pruner.js';
import { UndoStack } from './undo-stack.js';
import type * as HttpLayer from './http-layer.js';

export interface RunningServer {
  readonly url: string;
  readonly service: IdService;
  close(): Promise<void>;
}

export async function startServer(
  config: ServeConfig,
  /** listeningMessage: the log line's msg once listening (cluster workers use 'worker listening'; the primary logs 'listening'). */
  /** reservePort: false in cluster workers (the primary checked the port; the workers share it). */
  /** lockStateDir: false in cluster workers (the primary holds the state dir's lock for the whole server). */
  /** checkAdminExposure: false in cluster workers (the primary refused or warned once for the whole server). */
  options: {
    handleSignals?: boolean;
    listeningMessage?: string;
    reservePort?: boolean;
    lockStateDir?: boolean;
    checkAdminExposure?: boolean;
  } = {},
): Promise<RunningServer> {
  // No admin token beyond loopback is refused before anything is bound or taken.
  const openAdmin = options.checkAdminExposure === false ? undefined : checkAdminExposure(config);
  // Bind first: a port in use must fail before a store connection or a worker-id lease is taken.
  const reservation = options.reservePort === false ? undefined : await reservePort(config.host, config.port);
  try {
    // The configured port (0 stays 0) still names this server to its worker-id provider (ZooKeeper's host:port node).
    return await startReserved(config, { ...options, openAdmin }, reservation);
  } finally {
    // Threads the bin started for a store this start did not open (off-loop-entry.ts guessed from the flags).
    discardWarmThreads();
    await reservation?.release();
  }
}

type StartOptions = { handleSignals?: boolean; listeningMessage?: string; lockStateDir?: boolean; openAdmin?: string | undefined };
type Http = Pick<typeof HttpLayer, 'buildApp' | 'createIdService' | 'createSnowflakeService'>;
type App = Awaited<ReturnType<Http['buildApp']>>;
type Snowflake = ReturnType<Http['createSnowflakeService']>;

/** What the steps of a start have opened, handed from one step to the next and, at the end, to `close`. */
interface Opened {
  readonly logger: Logger;
  readonly backend: Backend;
  readonly state: StateDirPort;
  /** Closes the state dir, then lets go of its lock (when this process took it). */
  readonly releaseStateDir: () => Promise<void>;
}

async function startReserved(config: ServeConfig, options: StartOptions, reservation: PortReservation | undefined): Promise<RunningServer> {
  // Loaded while the store's and the state dir's threads start (http-layer.ts).
  const httpLoad = loadHttpLayer();
  httpLoad.catch(() => {}); // awaited below
  // Each step registers its undo once it has succeeded; a step that fails undoes the ones before it, in reverse, once.
  // A store client left open (reconnecting in the background) would keep the process alive after a failed start.
  const undo = new UndoStack();
  try {
    const stores = await openStoreAndStateDir(config, options, undo);
    const { pino, SequoiaMetrics, ...http } = await httpLoad;
    const logger = pino({ level: config.logLevel, base: { pid: process.pid } });
    if (options.openAdmin !== undefined) logger.warn({ host: config.host }, options.openAdmin);
    const opened: Opened = { ...stores, logger };
    const metrics = new SequoiaMetrics();
    const service = await startService(http, config, opened, metrics, undo);
    const drain: Drain = { leaving: false };
    const snowflake = await startSnowflake(http, config, opened, undo);
    const app = await undo.step(
      'http app',
      () => buildHttpApp(http, config, opened, { service, snowflake, metrics, drain }),
      (a) => a.close(),
    );
    await reservation?.release();
    try {
      await app.listen({ host: config.host, port: reservation?.port ?? config.port });
    } catch (e) {
      throw listenError(e, config.host, reservation?.port ?? config.port);
    }
    return running(config, options, opened, { service, snowflake, app, drain });
  } catch (e) {
    await undo.unwind();
    throw e;
  }
}

async function loadHttpLayer() {
  const { pino, SequoiaMetrics, buildApp, createIdService, createSnowflakeService } = await import('./http-layer.js');
  return { pino, SequoiaMetrics, buildApp, createIdService, createSnowflakeService };
}

/**
 * One state dir, one server, one store (DESIGN.md invariant 5); its I/O runs off the event loop (invariant 6).
 * The binding first: a dir of another store names that store, whether or not its server runs.
 * Both threads start at once (a start pays for one thread's start-up, not two).
 */
async function openStoreAndStateDir(config: ServeConfig, options: StartOptions, undo: UndoStack): Promise<Omit<Opened, 'logger'>> {
  const backendP = openBackend(config.store, { offLoop: true });
  backendP.catch(() => {}); // awaited below
  undo.push('store', async () => (await backendP.catch(() => undefined))?.segments.close());
  let lock: ServerLock | undefined;
  const state = await openStateDirOffLoop(config.stateDir);
  // The dir's lock goes after its thread has closed (one undo: a dir is never left locked and open, or unlocked and open).
  const releaseStateDir = async () => {
    await state.close().catch(() => {});
    lock?.release();
  };
  undo.push('state dir', releaseStateDir);
  // Checked now, bound once the store has started: a typo in --store, or a store that cannot be reached, must not bind the dir.
  await state.bindStore(storeIdentity(config.store), false);
  if (options.lockStateDir !== false) lock = claimStateDir(config.stateDir, config.store);
  const backend = await backendP;
  return { backend, state, releaseStateDir };
}

/** The IdService takes the store over: a failed start closes it (IdService.start), a stop too (IdService.close). */
async function startService(http: Http, config: ServeConfig, opened: Opened, metrics: SequoiaMetrics, undo: UndoStack): Promise<IdService> {
  const { logger, backend, state } = opened;
  const service = http.createIdService(config, backend, { logger, onLoad: metrics.onLoad, marks: state });
  undo.handOver('store');
  await service.start();
  undo.push('id service', () => service.close());
  await state.bindStore(storeIdentity(config.store), true);
  return service;
}

/**
 * A worker id that cannot be had (a used-up pool, a lease store down) stops snowflake only:
 * segment IDs are served; snowflake requests are refused with the code and the id is asked for again later.
 */
async function startSnowflake(http: Http, config: ServeConfig, opened: Opened, undo: UndoStack): Promise<Snowflake> {
  const { logger, backend, state } = opened;
  // The snowflake ticks share the state dir; it is closed after the service's give-back.
  const ticks = {
    lastTick: (space: string, workerId: number) => state.lastTick(space, workerId),
    recordTick: (space: string, workerId: number, tick: number, exact?: boolean) => state.recordTick(space, workerId, tick, exact),
    highestTick: (space: string) => state.highestTick(space),
    close: async () => {},
  };
  const snowflake = http.createSnowflakeService(config, backend, { logger, optional: true, ticks });
  undo.push('snowflake', () => snowflake?.close());
  await snowflake?.start().catch((e: unknown) => {
    if (!(e instanceof SequoiaError) || e.code === 'INVALID_ARGUMENT') throw e; // a configuration that cannot work: said at start
    const code = e.code;
    logger.error(
      { code, err: e instanceof Error ? e.message : String(e), layout: config.snowflakeLayout },
      'snowflake IDs unavailable: no worker id; serving the rest',
    );
  });
  return snowflake;
}

async function buildHttpApp(
  http: Http,
  config: ServeConfig,
  opened: Opened,
  parts: { service: IdService; snowflake: Snowflake; metrics: SequoiaMetrics; drain: Drain },
): Promise<App> {
  const { logger, backend } = opened;
  const fileLimit = openFileLimit();
  const maxConnections = connectionCap(config.maxConnections, fileLimit);
  if (maxConnections < config.maxConnections) {
    logger.warn(
      { maxConnections, configured: config.maxConnections, openFileLimit: fileLimit },
      'maxConnections lowered below the open-file limit',
    );
  }
  return http.buildApp({
    service: parts.service,
    snowflake: parts.snowflake,
    fallback: config.fallbackTags?.length
      ? new FallbackLeases({ tags: config.fallbackTags, ttlMs: config.fallbackLeaseTtlMs, leases: backend.leases })
      : undefined,
    adminToken: config.adminToken,
    clientTokens: config.clientTokens,
    metricsToken: config.metricsToken,
    trustedProxies: config.trustedProxies,
    rateLimit: config.rateLimit > 0 ? { perSecond: config.rateLimit, burst: config.rateLimitBurst ?? config.rateLimit * 2 } : undefined,
    tls: config.tlsCert && config.tlsKey ? { cert: readFileSync(config.tlsCert), key: readFileSync(config.tlsKey) } : undefined,
    requestTimeoutMs: config.requestTimeoutMs,
    maxHeaderBytes: config.maxHeaderBytes,
    formats: new FormatRegistry(config.formats ?? {}),
    stateDirProbe: stateDirProbe(config.stateDir),
    maxConnections,
    maxConnectionsPerAddress: config.maxConnectionsPerAddress,
    drain: parts.drain,
    logger,
    version: VERSION,
    metrics: parts.metrics,
    jsonSchemas: false,
  });
}

/** A started server: says where it listens, prunes the ledger, and stops in order on close (or on a signal). */
function running(
  config: ServeConfig,
  options: StartOptions,
  opened: Opened,
  parts: { service: IdService; snowflake: Snowflake; app: App; drain: Drain },
): RunningServer {
  const { logger, backend, releaseStateDir: release } = opened;
  const { service, snowflake, app, drain } = parts;
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `${config.tlsCert ? 'https' : 'http'}://${host}:${port}`;
  logger.info(
    { url, store: redactStoreUrl(config.store), stateDir: config.stateDir, version: VERSION },
    options.listeningMessage ?? 'listening',
  );
  const pruner = startLedgerPruner(backend.segments, config.ledgerRetentionDays, logger);

  let closing: Promise<void> | undefined;
  // The order of a stop (docs/operations.md, "Rolling restarts"): not ready and marked draining first, so
  // traffic moves away while this server still answers; then no new connection, the requests in flight
  // finish; then the unused ranges are given back (service.close) and the state dir let go.
  const close = (): Promise<void> => {
    closing ??= (async () => {
      drain.leaving = true;
      logger.info({ drainDelayMs: config.drainDelayMs }, 'draining: /readyz answers 503');
      if (config.drainDelayMs > 0) await new Promise((r) => setTimeout(r, config.drainDelayMs));
      const timer = setTimeout(() => {
        logger.warn({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out; closing connections');
        app.server.closeAllConnections();
      }, config.shutdownTimeoutMs);
      timer.unref();
      pruner.stop();
      await app.close();
      logger.info({}, 'requests finished');
      await snowflake?.close();
      await service.close();
      logger.info({}, 'ranges given back');
      await release();
      clearTimeout(timer);
      logger.info({}, 'stopped');
    })();
    return closing;
  };
  if (options.handleSignals) {
    const onSignal = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      close().then(
        () => process.exit(0),
        (e: unknown) => {
          logger.error({ err: String(e) }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    // SIGHUP too: a server left in a terminal or ssh session must drain and give its ranges back when the session ends.
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(signal, onSignal);
  }
  return { url, service, close };
}
