// Child process of the contract's multi-process test: opens the store at URL
// (built code from dist/), allocates COUNT segments of TAG with CONCURRENCY
// allocations in flight, and prints them as JSON.
// argv: DIST_DIR URL TAG COUNT CONCURRENCY
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [dist, url, tag, countText, concText] = process.argv.slice(2);
const { createStore } = await import(pathToFileURL(join(dist, 'app', 'stores.js')).href);
const store = await createStore(url);
await store.init();
const count = Number(countText);
const out = [];
let next = 0;
async function worker() {
  while (next < count) {
    next++;
    const a = await store.allocate(tag);
    out.push({ ...a, maxId: a.maxId.toString() });
  }
}
try {
  await Promise.all(Array.from({ length: Number(concText) }, worker));
  process.stdout.write(JSON.stringify(out));
} finally {
  await store.close();
}
