import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { reservePort } from './listen-check.js';

describe('reservePort', () => {
  it('releases at once while clients keep connecting (a server restarted on its port under traffic)', async () => {
    const r = await reservePort('127.0.0.1', 0);
    const sockets = Array.from({ length: 5 }, () => connect(r.port, '127.0.0.1').on('error', () => {}));
    await Promise.all(
      sockets.map((s) => new Promise<void>((resolve) => s.once('connect', () => resolve()).once('close', () => resolve()))),
    );
    const released = await Promise.race([
      r.release().then(() => 'released'),
      new Promise((resolve) => setTimeout(() => resolve('still held'), 2000)),
    ]);
    for (const s of sockets) s.destroy();
    expect(released).toBe('released');
  });
});
