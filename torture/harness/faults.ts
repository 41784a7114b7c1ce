/** Process faults at seeded random moments: SIGKILL, SIGTERM, SIGSTOP/SIGCONT of servers and of single cluster workers. */
import type { Context } from './context.js';
import { sleep } from './rng.js';
import type { ServerProcess } from './server.js';

export type ProcessFault = 'kill' | 'term' | 'pause' | 'kill-worker' | 'pause-worker';

/**
 * Until `until`: every 300-1200 ms one fault on one server; a server that
 * went down is started again after a short while (same port, same state).
 */
export async function processFaults(
  ctx: Context,
  servers: readonly ServerProcess[],
  until: number,
  faults: readonly ProcessFault[],
): Promise<void> {
  const counts: Record<string, number> = {};
  while (Date.now() < until - 500) {
    await sleep(ctx.rng.int(300, 1200));
    const s = ctx.rng.pick(servers);
    if (!s.running) continue;
    const f = ctx.rng.pick(faults);
    counts[f] = (counts[f] ?? 0) + 1;
    switch (f) {
      case 'kill':
        await s.kill();
        await sleep(ctx.rng.int(50, 500));
        await s.start();
        break;
      case 'term':
        await s.stop();
        await s.start();
        break;
      case 'pause':
        s.signal('SIGSTOP');
        await sleep(ctx.rng.int(200, 1500));
        s.signal('SIGCONT');
        break;
      case 'kill-worker':
        s.signalWorker((p) => (p.length === 0 ? undefined : ctx.rng.pick(p)), 'SIGKILL');
        break;
      case 'pause-worker': {
        const pid = s.signalWorker((p) => (p.length === 0 ? undefined : ctx.rng.pick(p)), 'SIGSTOP');
        await sleep(ctx.rng.int(200, 1500));
        if (pid !== undefined) s.signalWorker((p) => (p.includes(pid) ? pid : undefined), 'SIGCONT');
        break;
      }
    }
  }
  ctx.notes.push(
    `process faults: ${
      Object.entries(counts)
        .map(([k, v]) => `${k} ×${v}`)
        .join(', ') || 'none'
    }`,
  );
}
