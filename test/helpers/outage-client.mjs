// One SDK client as its own process, for the outage test (test/client/outage.test.ts):
// argv[2] is JSON {urls, tags, reserve, fallback}; it draws every tag at a steady
// pace and prints one JSON line every 100 ms: the IDs it got since the last
// line, per tag, the error codes, and client.stats(). SIGTERM: a last line, then exit.
import { clearInterval, setInterval, setTimeout } from 'node:timers';
import { createClient } from '../../dist/client/index.js';

const o = JSON.parse(process.argv[2]);
const client = createClient({
  urls: o.urls,
  batch: { initial: 20, min: 10, max: 500, targetMs: 500 },
  timeoutMs: 1000,
  retry: { attempts: 2, baseDelayMs: 10, maxDelayMs: 50 },
  reserve: o.reserve,
  fallback: o.fallback,
});
const ids = Object.fromEntries(o.tags.map((t) => [t, []]));
const codes = Object.fromEntries(o.tags.map((t) => [t, {}]));
let stop = false;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function flush() {
  const line = { ids: {}, codes, stats: client.stats() };
  for (const t of o.tags) {
    line.ids[t] = ids[t].map(String);
    ids[t] = [];
  }
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

const loops = o.tags.map(async (tag) => {
  while (!stop) {
    try {
      ids[tag].push(await client.next(tag));
    } catch (e) {
      const code = e && typeof e.code === 'string' ? e.code : String(e);
      codes[tag][code] = (codes[tag][code] ?? 0) + 1;
    }
    await sleep(4);
  }
});
const timer = setInterval(flush, 100);
process.on('SIGTERM', () => {
  stop = true;
  void Promise.all(loops).then(async () => {
    clearInterval(timer);
    flush();
    await client.close();
    process.stdout.write('{"done":true}\n', () => process.exit(0));
  });
});
