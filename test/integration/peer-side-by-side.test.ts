/**
 * Issue 24: Sequoia beside Leaf and beside Tinyid, each on the peer's own
 * table. On real PostgreSQL and MariaDB, two stand-ins of the peer's server
 * (Leaf's DAO SQL, transaction and dynamic step, test/helpers/leaf-standin.ts;
 * Tinyid's DAO SQL and optimistic READ COMMITTED transaction,
 * test/helpers/tinyid-standin.ts) and two `sequoia serve --store
 * …?schema=leaf|tinyid` processes draw from one row at once while servers and
 * stand-ins are SIGKILLed and restarted: the union of every ID handed out has
 * no repeat, and on Tinyid's row (delta 3, remainder 2) every ID is ≡ 2 (mod 3).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { uniqueName } from '../contract/backends.js';
import { assertBuilt, type ServerProcess } from '../helpers/cli.js';
import { expectNoOverlap, PEERS, type PeerSchema, peerStoreUrl, serveBeside } from '../helpers/peer-schemas.js';
import { SQL_DATABASES, type SqlDatabase } from '../helpers/sql-databases.js';
import { describeWithService } from '../helpers/services.js';
import { type StandIn, startStandIn } from '../helpers/standin-process.js';

const RUN_MS = Number(process.env.SEQUOIA_SIDE_BY_SIDE_RUN_MS ?? 6000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const servers = new Set<ServerProcess>();
const standIns = new Set<StandIn>();
afterAll(() => {
  for (const s of servers) s.child.kill('SIGKILL');
  for (const s of standIns) s.child.kill('SIGKILL');
});

function standIn(peer: PeerSchema, db: SqlDatabase, table: string, tag: string): StandIn {
  const p = startStandIn(peer.standIn, [db.name, db.url, table, tag]);
  standIns.add(p);
  void p.exited.then(() => standIns.delete(p));
  return p;
}

for (const db of SQL_DATABASES) {
  const describeStore = await describeWithService(db.service, db.probe);
  for (const peer of PEERS) {
    const { row, leafRoute } = peer.sideBySide;
    const delta = BigInt(row.delta ?? 1);
    const remainder = BigInt(row.remainder ?? 0);
    const rule = row.delta === undefined ? '' : `, every ID ≡ ${remainder} mod ${delta}`;
    describeStore(`Sequoia beside ${peer.title} on ${peer.table}: ${db.name}`, () => {
      it(`two ${peer.title} stand-ins and two Sequoia servers, kills and restarts for ${RUN_MS} ms: no ID twice${rule}`, async () => {
        assertBuilt();
        const tag = row.tag;
        const table = uniqueName(`t_${peer.table}`);
        await db.exec(peer.ddl(db.name, table));
        await db.exec(peer.insertRow(table, row));
        const store = peerStoreUrl(db.url, peer, { table });
        const base = mkdtempSync(join(tmpdir(), `sequoia-${peer.name}-${db.name}-`));
        const states = [join(base, 's0'), join(base, 's1')];
        const seq: (ServerProcess | undefined)[] = await Promise.all(states.map((d) => serveBeside(store, d, servers)));
        const peers: StandIn[] = [standIn(peer, db, table, tag), standIn(peer, db, table, tag)];
        const allPeers: StandIn[] = [...peers];
        const ids: string[] = [];
        let stop = false;
        let kills: number;
        try {
          const client = async (c: number) => {
            let i = c;
            while (!stop) {
              const s = seq[i++ % seq.length];
              if (!s) {
                await sleep(5);
                continue;
              }
              const onLeafRoute = leafRoute && i % 4 === 0;
              try {
                const res = await fetch(
                  onLeafRoute ? `${s.url}/api/segment/get/${tag}` : `${s.url}/v1/segment/${tag}?count=${1 + (i % 9)}`,
                );
                const text = await res.text();
                if (res.status !== 200) continue;
                if (onLeafRoute) ids.push(text);
                else ids.push(...(JSON.parse(text) as { ids: string[] }).ids);
              } catch {
                await sleep(5); // killed under us
              }
            }
          };
          const clients = Array.from({ length: 4 }, (_, c) => client(c));
          const until = Date.now() + RUN_MS;
          const restarts: Promise<void>[] = [];
          let round = 0;
          let seqKills = 0;
          let peerKills = 0;
          while (Date.now() < until - 1000 || seqKills < 2 || peerKills < 2) {
            await sleep(600);
            round++;
            if (round % 2 === 1) {
              const i = seqKills % seq.length;
              const victim = seq[i];
              if (!victim) continue; // still restarting
              seq[i] = undefined;
              victim.child.kill('SIGKILL');
              seqKills++;
              // restart in the background (a start takes seconds here): the load and the other kills go on
              restarts.push(
                (async () => {
                  expect(await victim.exited).toBe('SIGKILL');
                  seq[i] = await serveBeside(store, states[i] as string, servers);
                })(),
              );
            } else {
              const j = peerKills % peers.length;
              const victim = peers[j] as StandIn;
              victim.child.kill('SIGKILL');
              peerKills++;
              await victim.exited;
              peers[j] = standIn(peer, db, table, tag);
              allPeers.push(peers[j] as StandIn);
            }
          }
          await Promise.all(restarts);
          kills = seqKills + peerKills;
          // both servers serve again for a while after their restarts
          await sleep(Math.max(1500, until - Date.now()));
          stop = true;
          await Promise.all(clients);
          for (const l of peers) l.child.kill('SIGTERM');
          await Promise.all(peers.map((l) => l.exited));

          const peerRanges = allPeers.flatMap((l) => l.ranges);
          const seqRanges = ids.map((id): [bigint, bigint] => [BigInt(id), BigInt(id) + 1n]);
          console.log(`[${peer.name} ${db.name}] ${ids.length} Sequoia IDs, ${peerRanges.length} ${peer.title} segments, ${kills} kills`);
          // a stand-in prints a segment's first ID and its last + 1; all of its IDs are of the class, so the bounds are too
          for (const [first, end] of peerRanges) {
            expect(first % delta).toBe(remainder);
            expect((end - 1n) % delta).toBe(remainder);
          }
          expect(ids.filter((id) => BigInt(id) % delta !== remainder)).toEqual([]);
          expect(kills).toBeGreaterThanOrEqual(4);
          expect(ids.length).toBeGreaterThan(200);
          expect(peerRanges.length).toBeGreaterThan(20);
          for (const l of allPeers) expect(l.stderr()).toBe('');
          expect(new Set(ids).size).toBe(ids.length);
          expectNoOverlap([...peerRanges, ...seqRanges]);
        } finally {
          stop = true;
          for (const l of peers) l.child.kill('SIGKILL');
          await Promise.all(
            seq.map(async (s) => {
              if (!s) return;
              s.child.kill('SIGTERM');
              await s.exited;
            }),
          );
          await db.exec(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
          await db.exec(`DELETE FROM ${peer.sideState.table} WHERE ${peer.sideState.column} = '${table}'`).catch(() => {});
        }
      }, 240_000);
    });
  }
}
