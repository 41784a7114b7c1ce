/**
 * Bench-only server: buildApp over a memory store with metrics on (the
 * default SequoiaMetrics, load histogram wired, sampler running, process
 * metrics) or off (`metrics: false`). Prints `LISTENING <url>`.
 *
 *   node dist-bench/bench/metrics-server.js on|off
 */
import { MemorySegmentStore } from '../src/adapters/memory/memory-segment-store.js';
import { MemoryHighWaterMarkStore } from '../src/adapters/memory/memory-high-water-mark-store.js';
import { buildApp } from '../src/server/build-app.js';
import { SequoiaMetrics } from '../src/server/metrics.js';
import { IdService } from '../src/service/id-service.js';

const on = process.argv[2] !== 'off';
const store = new MemorySegmentStore();
await store.createTag({ tag: 'bench', step: 1_000_000 });
const metrics = on ? new SequoiaMetrics() : false;
const service = new IdService({
  store,
  marks: new MemoryHighWaterMarkStore(),
  refreshIntervalMs: 0,
  ...(metrics ? { onLoad: metrics.onLoad } : {}),
});
await service.start();
const app = await buildApp({ service, metrics });
await app.listen({ host: '127.0.0.1', port: 0 });
const a = app.server.address();
if (a && typeof a === 'object') console.log(`LISTENING http://127.0.0.1:${a.port}`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
