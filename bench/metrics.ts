/**
 * What metrics cost the hot path, measured side by side in one run:
 *
 * - in-process: `allocator.next()` with a SequoiaMetrics attached to the
 *   service (sampler timer, default process metrics, a scrape every second)
 *   against the same loop with none;
 * - HTTP: `GET /api/segment/get/{tag}` (one ID per request, wrk -c50) against a
 *   server with metrics on, scraped once a second on /metrics and polled on
 *   /v1/status like the /ui page, against one built with `metrics: false`.
 *
 * Rounds alternate on/off so drift on the shared machine hits both alike.
 *
 *   npm run build && npx tsc -p tsconfig.bench.json && node dist-bench/bench/metrics.js
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemorySegmentStore } from '../src/adapters/memory/memory-segment-store.js';
import { MemoryHighWaterMarkStore } from '../src/adapters/memory/memory-high-water-mark-store.js';
import { SequoiaMetrics } from '../src/server/metrics.js';
import { IdService } from '../src/service/id-service.js';
import { haveWrk, wrk } from './http.js';
import { fmt, median, startChild, stopChild } from './util.js';

const N = 20_000_000;
const CHUNK = 1_000_000;

async function inProcess(withMetrics: boolean): Promise<number> {
  const store = new MemorySegmentStore();
  await store.createTag({ tag: 'bench', step: 1_000_000 });
  const metrics = withMetrics ? new SequoiaMetrics() : undefined;
  const service = new IdService({
    store,
    marks: new MemoryHighWaterMarkStore(),
    refreshIntervalMs: 0,
    ...(metrics ? { onLoad: metrics.onLoad } : {}),
  });
  await service.start();
  metrics?.attach(service);
  const scrape = metrics ? setInterval(() => void metrics.metricsText(), 1000) : undefined;
  const order = await service.allocator('bench');
  await order.next();
  let acc = 0;
  const t0 = performance.now();
  for (let done = 0; done < N; done += CHUNK) {
    for (let i = 0; i < CHUNK; i++) {
      const v = order.next();
      acc ^= typeof v === 'number' ? v : Number(await v);
    }
    // Let timers (sampler, scrapes) run between chunks, as they would in a server.
    await new Promise((r) => setImmediate(r));
  }
  const ms = performance.now() - t0;
  if (acc === -1) console.log(acc);
  if (scrape) clearInterval(scrape);
  metrics?.close();
  await service.close();
  return (N / ms) * 1000;
}

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Both servers run at once; short wrk bursts alternate between them, so each pair sees the same machine load. */
async function httpPairs(rounds: number, seconds: number): Promise<{ on: number[]; off: number[] }> {
  const script = join(root, 'dist-bench', 'bench', 'metrics-server.js');
  const on = await startChild([script, 'on']);
  const off = await startChild([script, 'off']);
  const poll = setInterval(() => {
    void fetch(`${on.url}/metrics`)
      .then((r) => r.text())
      .catch(() => {});
    void fetch(`${on.url}/v1/status`)
      .then((r) => r.text())
      .catch(() => {});
  }, 1000);
  const res = { on: [] as number[], off: [] as number[] };
  try {
    wrk(`${on.url}/api/segment/get/bench`, 50, 2); // warm-up
    wrk(`${off.url}/api/segment/get/bench`, 50, 2);
    for (let r = 0; r < rounds; r++) {
      for (const which of r % 2 ? ['on', 'off'] : ['off', 'on']) {
        const srv = which === 'on' ? on : off;
        res[which as 'on' | 'off'].push(wrk(`${srv.url}/api/segment/get/bench`, 50, seconds).rps);
      }
    }
  } finally {
    clearInterval(poll);
    await stopChild(on.child);
    await stopChild(off.child);
  }
  return res;
}

export interface MetricsBench {
  inProcessOn: number;
  inProcessOff: number;
  /** Median over rounds of (on / off) within each round. */
  inProcessRatio: number;
  httpOn: number | undefined;
  httpOff: number | undefined;
  httpRatio: number | undefined;
}

const pairRatios = (on: number[], off: number[]) => median(on.map((x, i) => x / (off[i] as number)));

export async function benchMetrics(rounds: number, seconds = 3): Promise<MetricsBench> {
  const ip = { on: [] as number[], off: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    // Alternate which goes first.
    for (const on of r % 2 ? [true, false] : [false, true]) (on ? ip.on : ip.off).push(await inProcess(on));
  }
  const hp = haveWrk() ? await httpPairs(rounds, seconds) : undefined;
  return {
    inProcessOn: median(ip.on),
    inProcessOff: median(ip.off),
    inProcessRatio: pairRatios(ip.on, ip.off),
    httpOn: hp && median(hp.on),
    httpOff: hp && median(hp.off),
    httpRatio: hp && pairRatios(hp.on, hp.off),
  };
}

export function printMetricsBench(r: MetricsBench, rounds: number): void {
  const ratio = (a: number, b: number) => `${((a / b) * 100).toFixed(1)}%`;
  console.log(`## Metrics on vs off (${rounds} alternating rounds; on / off is the median of the per-round ratios)\n`);
  console.log('| what | metrics off | metrics on | on / off |');
  console.log('| --- | ---: | ---: | ---: |');
  console.log(
    `| in-process \`allocator.next()\`, IDs/s | ${fmt(r.inProcessOff)} | ${fmt(r.inProcessOn)} | ${ratio(r.inProcessRatio, 1)} |`,
  );
  if (r.httpOn !== undefined && r.httpOff !== undefined && r.httpRatio !== undefined) {
    console.log(
      `| HTTP \`GET /api/segment/get/{tag}\` (wrk -t2 -c50), requests/s | ${fmt(r.httpOff)} | ${fmt(r.httpOn)} | ${ratio(r.httpRatio, 1)} |`,
    );
  } else {
    console.log('| HTTP | skipped: `wrk` is not installed | | |');
  }
  console.log('\n"on": SequoiaMetrics attached (1 s sampler, process metrics), /metrics scraped and /v1/status polled once a second.\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
  printMetricsBench(await benchMetrics(rounds, Number(process.env.BENCH_SECONDS ?? 3)), rounds);
}
