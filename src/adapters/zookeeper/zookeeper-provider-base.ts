/**
 * What both zookeeper worker-id providers (zookeeper-worker-id-provider.ts in
 * Sequoia's tree, zookeeper-leaf-provider.ts in Leaf's) build alike from their
 * options: the lease length the report interval gives, the clock and log, the
 * session, the start-time wait, and the writer of their lease ledger.
 */
import { type Clock, systemClock } from '../../core/clock.js';
import { silentLogger } from '../../core/silent-logger.js';
import type { Logger } from '../../ports/logger.js';
import { HoldingWriter } from './zookeeper-lease-ledger.js';
import { ZookeeperSession } from './zookeeper-session.js';
import { zookeeperTtlMs } from './zookeeper-spec.js';

export interface ZookeeperProviderOptions {
  /** Connection string, `host:port[,host:port…]`. */
  readonly connect: string;
  /** The node's name; each provider has its default. */
  readonly identity?: string | undefined;
  /** The server's port, for the default identity. */
  readonly port?: number | undefined;
  /** How often the tick is reported, ms. Default 3000 (Leaf's). */
  readonly reportIntervalMs?: number | undefined;
  /** Largest gap between the clock and the reported tick waited out at start, ms. Default 2 × interval + 2000. */
  readonly maxStartWaitMs?: number | undefined;
  /** How long a start waits for ZooKeeper, ms. Default 3000. */
  readonly connectTimeoutMs?: number | undefined;
  /** Per request, ms. Default 3000. */
  readonly requestTimeoutMs?: number | undefined;
  /** ZooKeeper session timeout, ms (an ephemeral node of a crashed process lasts this long). Default 6000. */
  readonly sessionTimeoutMs?: number | undefined;
  /** How long the lease ledger keeps a holding not written since, ms (0: for ever). Default 90 days. */
  readonly ledgerRetentionMs?: number | undefined;
  /** Sequoia's version, for the ledger's holder. */
  readonly version?: string | undefined;
  readonly clock?: Clock | undefined;
  readonly logger?: Logger | undefined;
}

export abstract class ZookeeperProviderBase {
  /** Renewals carry the reports. */
  readonly leased = true;
  readonly ttlMs: number;
  protected readonly reportIntervalMs: number;
  protected readonly maxStartWaitMs: number;
  protected readonly connectTimeoutMs: number;
  protected readonly sessionTimeoutMs: number;
  protected readonly clock: Clock;
  protected readonly log: Logger;
  protected readonly session: ZookeeperSession;
  protected readonly ledger: HoldingWriter;

  /** `ledger`: where the holdings go (zookeeper-lease-ledger.ts) and the holder's `host:port`; their owner is `identity`. */
  protected constructor(
    o: ZookeeperProviderOptions,
    readonly identity: string,
    ledger: { readonly root: string; readonly host: string },
  ) {
    this.ttlMs = zookeeperTtlMs(o.reportIntervalMs);
    this.reportIntervalMs = this.ttlMs / 3;
    // A crash leaves a reservation up to two intervals ahead: waited out at the next start.
    this.maxStartWaitMs = o.maxStartWaitMs ?? 2 * this.reportIntervalMs + 2000;
    this.connectTimeoutMs = o.connectTimeoutMs ?? 3000;
    this.sessionTimeoutMs = o.sessionTimeoutMs ?? 6000;
    this.clock = o.clock ?? systemClock;
    this.log = o.logger ?? silentLogger;
    this.session = new ZookeeperSession({
      connect: o.connect,
      sessionTimeoutMs: this.sessionTimeoutMs,
      requestTimeoutMs: o.requestTimeoutMs ?? 3000,
    });
    this.ledger = new HoldingWriter(this.session, this.clock, { ...ledger, owner: identity }, o.version, o.ledgerRetentionMs);
  }

  async close(): Promise<void> {
    this.session.close();
  }
}
