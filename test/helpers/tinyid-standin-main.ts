/**
 * A Tinyid server's allocation path as a process of its own (bundled and
 * started by test/helpers/standin-process.ts): takes segments of BIZ_TYPE
 * with Tinyid's DbSegmentIdServiceImpl (tinyid-standin.ts) until killed, and
 * prints each segment's IDs (SegmentId.nextId, every one ≡ remainder mod
 * delta) as `FIRST LAST+1` on stdout before taking the next. A conflict after
 * Tinyid's 3 tries is what its callers see; they ask again.
 * argv: postgres|mysql URL TABLE BIZ_TYPE
 */
import { mysqlTinyidService, postgresTinyidService, segmentIds, TinyidConflict } from './tinyid-standin.js';

const [kind, url, table, bizType] = process.argv.slice(2) as [string, string, string, string];
const service = kind === 'postgres' ? postgresTinyidService(url, table) : mysqlTinyidService(url, table);
let stop = false;
process.on('SIGTERM', () => (stop = true));
while (!stop) {
  try {
    const ids = segmentIds(await service.getNextSegmentId(bizType));
    const first = ids[0];
    const last = ids[ids.length - 1];
    if (first !== undefined && last !== undefined) process.stdout.write(`${first} ${last + 1n}\n`);
  } catch (e) {
    if (!(e instanceof TinyidConflict)) throw e;
  }
  await new Promise((r) => setTimeout(r, 15));
}
await service.close();
