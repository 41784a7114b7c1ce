import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../core/errors.js';
import { type ReadinessInput, type TagReadiness, liveBody, readyBody } from './health-body.js';

const up = { reachable: true } as const;
const down = (cause: unknown = new Error('timeout')) => ({ reachable: false, cause }) as const;
const tag = (t: Partial<TagReadiness> = {}): TagReadiness => ({
  tag: 't',
  remaining: 10,
  refusing: undefined,
  lastLoadFailed: false,
  ...t,
});

function refusal(input: ReadinessInput): UnavailableError {
  try {
    readyBody(input);
  } catch (e) {
    expect(e).toBeInstanceOf(UnavailableError);
    expect((e as UnavailableError).code).toBe('STORE_UNAVAILABLE');
    return e as UnavailableError;
  }
  throw new Error('readyBody did not refuse');
}

describe('liveBody and readyBody (/healthz, /readyz)', () => {
  it('/healthz is ok whatever the store', () => {
    expect(liveBody()).toEqual({ status: 'ok' });
  });

  it('a draining server is not ready whatever else holds: SHUTTING_DOWN', () => {
    expect(() => readyBody({ storeKind: 'postgres', ping: up, tags: [tag()], draining: true })).toThrow(
      expect.objectContaining({ code: 'SHUTTING_DOWN' }) as Error,
    );
    expect(readyBody({ storeKind: 'postgres', ping: up, tags: [tag()], draining: false }).status).toBe('ready');
  });

  it('/readyz names the store once it answers', () => {
    expect(readyBody({ storeKind: 'postgres', ping: up })).toEqual({
      status: 'ready',
      store: 'postgres',
      storeState: 'reachable',
      tags: { served: 0, refused: 0 },
    });
  });

  it('store down and nothing buffered: STORE_UNAVAILABLE, with the ping failure as cause', () => {
    const cause = new Error('timeout');
    const e = refusal({ storeKind: 'redis', ping: down(cause) });
    expect(e.message).toBe('not ready: store redis is not reachable and no tag has IDs buffered');
    expect(e.cause).toBe(cause);
    expect(refusal({ storeKind: 'redis', ping: down(), tags: [tag({ remaining: 0 })] }).message).toMatch(/not reachable/);
  });

  it('store down while a tag has IDs buffered: ready (the server still issues them)', () => {
    expect(readyBody({ storeKind: 'redis', ping: down(), tags: [tag({ remaining: 0 }), tag({ tag: 'u', remaining: 5 })] })).toMatchObject({
      status: 'ready',
      storeState: 'unreachable',
      tags: { served: 2, refused: 1 },
    });
  });

  it('a state directory that takes no write: not ready, whatever the store and the buffers', () => {
    const cause = Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' });
    const e = refusal({ storeKind: 'sqlite', ping: up, stateDir: down(cause), tags: [tag()] });
    expect(e.message).toBe('not ready: the state directory cannot be written, so no new range or tick can be recorded');
    expect(e.cause).toBe(cause);
    expect(readyBody({ storeKind: 'sqlite', ping: up, stateDir: up, tags: [tag()] }).status).toBe('ready');
  });

  it('every served tag refused (rollback, or empty after a failed load): not ready; one that can issue is enough', () => {
    const rolled = tag({ refusing: 'STORE_ROLLBACK_DETECTED' });
    const failed = tag({ tag: 'f', remaining: 0, lastLoadFailed: true });
    expect(refusal({ storeKind: 'sqlite', ping: up, tags: [rolled] }).message).toBe(
      'not ready: every tag this server serves is refused (1 of 1)',
    );
    expect(refusal({ storeKind: 'sqlite', ping: up, tags: [rolled, failed] }).message).toMatch(/\(2 of 2\)/);
    // empty but loadable on demand, or with IDs at hand: it can issue
    expect(readyBody({ storeKind: 'sqlite', ping: up, tags: [rolled, tag({ remaining: 0 })] }).tags).toEqual({ served: 2, refused: 1 });
    expect(readyBody({ storeKind: 'sqlite', ping: up, tags: [rolled, tag({ remaining: 3, lastLoadFailed: true })] }).status).toBe('ready');
  });
});
