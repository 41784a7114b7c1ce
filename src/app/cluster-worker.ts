/**
 * Entry of one `serve --workers N` worker (forked by cluster.ts): asks the
 * primary for the resolved configuration (over IPC, so secrets never sit in
 * the environment), runs a complete server on the shared port, reports ready.
 * SIGTERM/SIGINT drain it like a single server; losing the primary (its IPC
 * channel closes) drains it too, so no orphan keeps serving.
 */
import { SequoiaError } from '../core/errors.js';
import type { PrimaryMessage, WorkerMessage } from './cluster.js';

function send(m: WorkerMessage): void {
  process.send?.(m);
}

process.on('message', (m: PrimaryMessage) => {
  if (m.type !== 'config') return;
  void (async () => {
    try {
      const { startServer } = await import('./start-server.js');
      const server = await startServer(m.config, {
        handleSignals: true,
        listeningMessage: 'worker listening',
        reservePort: false,
        lockStateDir: false,
      });
      process.once('disconnect', () => {
        void server.close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      });
      send({ type: 'ready', url: server.url, pid: process.pid });
    } catch (e) {
      const code = e instanceof SequoiaError ? (e.code === 'INVALID_ARGUMENT' ? 2 : 1) : 1;
      const message = e instanceof SequoiaError ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e);
      console.error(`sequoia: ${message}`);
      process.exit(code);
    }
  })();
});
send({ type: 'need-config' });
