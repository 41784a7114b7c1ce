/**
 * What every Redis adapter does the same way: the client's options (no
 * offline queue, one retry, so a down Redis answers STORE_UNAVAILABLE within
 * the timeouts instead of hanging), the first connect, scripts by EVALSHA,
 * and driver errors as STORE_UNAVAILABLE.
 */
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { located, SequoiaError, UnavailableError } from '../../core/errors.js';

export interface RedisClientOptions {
  /** `redis://[:password@]host:port[/db]`. */
  readonly url: string;
  /** Default 2000 ms. */
  readonly connectTimeoutMs?: number;
  /** Default 2000 ms. */
  readonly commandTimeoutMs?: number;
  /** Called with connection errors (the client reconnects by itself). Default: ignored. */
  readonly onError?: (err: Error) => void;
  /** The connection's name in `CLIENT LIST`, so an operator sees who is connected. Default `sequoia`. */
  readonly clientName?: string;
}

export class RedisClient {
  readonly redis: Redis;
  /** `host:port` for messages (never credentials). */
  readonly address: string;
  private lastConnectError: Error | undefined;
  private readonly shas = new Map<string, string>();

  constructor(options: RedisClientOptions) {
    this.redis = new Redis(options.url, {
      connectionName: options.clientName ?? 'sequoia',
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: options.connectTimeoutMs ?? 2000,
      commandTimeout: options.commandTimeoutMs ?? 2000,
      retryStrategy: (times) => Math.min(times * 100, 2000),
    });
    const onError = options.onError ?? (() => {});
    this.address = `${this.redis.options.host ?? '127.0.0.1'}:${this.redis.options.port ?? 6379}`;
    this.redis.on('error', (err: Error) => {
      this.lastConnectError = err;
      onError(err);
    });
  }

  /** Connects (or waits for the reconnect under way) and pings. */
  async connect(): Promise<void> {
    try {
      if (this.redis.status === 'wait') await this.redis.connect();
      else if (this.redis.status !== 'ready') await this.waitReady();
      await this.redis.ping();
    } catch (e) {
      const cause = this.lastConnectError ?? e;
      const code = (cause as { code?: string }).code ?? (cause instanceof Error ? cause.message : String(cause));
      const { message, located: split } = located((w) => `cannot reach Redis${w ? ` at ${w}` : ''} (${code})`, this.address);
      throw new UnavailableError('STORE_UNAVAILABLE', message, { cause, retryAfterMs: 1000, located: split });
    }
  }

  /** EVALSHA, loading the script with EVAL the first time (or after a SCRIPT FLUSH). */
  async script(body: string, keys: string[], args: string[]): Promise<unknown> {
    let sha = this.shas.get(body);
    if (sha === undefined) {
      sha = createHash('sha1').update(body).digest('hex');
      this.shas.set(body, sha);
    }
    const s = sha;
    return this.call(async () => {
      try {
        return await this.redis.evalsha(s, keys.length, ...keys, ...args);
      } catch (e) {
        if (!String((e as Error).message).startsWith('NOSCRIPT')) throw e;
        return this.redis.eval(body, keys.length, ...keys, ...args);
      }
    });
  }

  async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw redisError(e);
    }
  }

  async close(): Promise<void> {
    if (this.redis.status === 'ready') {
      try {
        await this.redis.quit();
        return;
      } catch {
        // fall through to a hard disconnect
      }
    }
    this.redis.disconnect();
  }

  private waitReady(): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`Redis not ready (status ${this.redis.status})`));
      }, 3000);
      const onReady = () => {
        cleanup();
        resolve();
      };
      const cleanup = () => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
      };
      this.redis.on('ready', onReady);
    });
  }
}

export function redisError(e: unknown): SequoiaError {
  if (e instanceof SequoiaError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  return new UnavailableError('STORE_UNAVAILABLE', `Redis store error (${msg})`, { cause: e, retryAfterMs: 1000 });
}

export function globEscape(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
