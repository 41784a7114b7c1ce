import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../core/errors.js';
import { liveBody, readyBody } from './health-body.js';

describe('liveBody and readyBody (/healthz, /readyz)', () => {
  it('/healthz is ok whatever the store', () => {
    expect(liveBody()).toEqual({ status: 'ok' });
  });

  it('/readyz names the store once it answers', () => {
    expect(readyBody('postgres', { reachable: true })).toEqual({ status: 'ready', store: 'postgres' });
  });

  it('/readyz is STORE_UNAVAILABLE, with the ping failure as cause, when the store does not answer', () => {
    const cause = new Error('timeout');
    let thrown: unknown;
    try {
      readyBody('redis', { reachable: false, cause });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(UnavailableError);
    expect(thrown).toMatchObject({ code: 'STORE_UNAVAILABLE', message: 'store redis is not reachable', cause });
  });
});
