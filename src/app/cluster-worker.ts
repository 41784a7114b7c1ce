/**
 * Entry of one `serve --workers N` worker (forked by cluster.ts): asks the
 * primary for the resolved configuration (over IPC, so secrets never sit in
 * the environment), runs a complete server on the shared port, reports ready.
 * SIGTERM/SIGINT/SIGHUP drain it like a single server; losing the primary (its IPC
 * channel closes) drains it too, so no orphan keeps serving.
 */
import { SequoiaError, exitStatusFor } from '../core/errors.js';
import { workerSlot } from '../server/cluster-gather.js';
import type { PrimaryMessage, WorkerMessage } from './cluster.js';

function send(m: WorkerMessage): void {
  process.send?.(m);
}

process.on('message', (m: PrimaryMessage) => {
  if (m.type !== 'config') return;
  void (async () => {
    try {
      const { startServer } = await import('./start-server.js');
      // The slot this worker was forked for (SEQUOIA_WORKER_SLOT, its one carrier): its own ZooKeeper node and cache.
      const server = await startServer(
        { ...m.config, workerSlot: workerSlot() },
        { handleSignals: true, listeningMessage: 'worker listening', reservePort: false, lockStateDir: false, checkAdminExposure: false },
      );
      process.once('disconnect', () => {
        void server.close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      });
      send({ type: 'ready', url: server.url, pid: process.pid });
    } catch (e) {
      // The exit status the table gives the code, as `sequoia` itself exits (the primary exits with it).
      const code = exitStatusFor(e);
      const message = e instanceof SequoiaError ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e);
      console.error(`sequoia: ${message}`);
      process.exit(code);
    }
  })();
});
send({ type: 'need-config' });
