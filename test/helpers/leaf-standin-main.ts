/**
 * A Leaf segment server's allocation path as a process of its own (bundled
 * and started by test/helpers/standin-process.ts): loads segments of TAG with
 * Leaf's DAO and updateSegmentFromDb (leaf-standin.ts) until killed, and
 * prints each segment it would hand out as `START MAX` (IDs [START, MAX)) on
 * stdout before taking the next.
 * argv: postgres|mysql URL TABLE TAG
 */
import { LeafSegmentLoader, mysqlLeafDao, postgresLeafDao } from './leaf-standin.js';

const [kind, url, table, tag] = process.argv.slice(2) as [string, string, string, string];
const dao = kind === 'postgres' ? postgresLeafDao(url, table) : mysqlLeafDao(url, table);
const loader = new LeafSegmentLoader(dao, tag);
let stop = false;
process.on('SIGTERM', () => (stop = true));
while (!stop) {
  const s = await loader.load();
  process.stdout.write(`${s.start} ${s.max}\n`);
  await new Promise((r) => setTimeout(r, 15));
}
await dao.close();
