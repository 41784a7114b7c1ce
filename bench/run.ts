/**
 * `npm run bench [-- section…]`: sections startup, core, generators, snowflake, stores, strict, latency, http, batches, client, cluster, metrics, offloop, audit, ledger, reserve (default: all).
 * Prints Markdown for BENCHMARKS.md. Every ratio compares numbers measured in
 * this same run; each figure is the median of several rounds.
 */
import { cpus, loadavg } from 'node:os';
import { type AuditBenchResult, benchAudit, benchAuditDb, benchAuditMysql } from './audit.js';
import { benchLedger } from './ledger.js';
import { benchBatches } from './batches.js';
import { benchCore } from './core.js';
import { benchClient } from './client.js';
import { benchCluster } from './cluster.js';
import { benchGenerators } from './generators.js';
import { benchHttp, haveWrk } from './http.js';
import { benchLatency } from './latency.js';
import { benchMetrics, printMetricsBench } from './metrics.js';
import { benchOffLoop } from './offloop.js';
import { benchReserve } from './reserve.js';
import { benchSnowflake } from './snowflake.js';
import { benchStartup } from './startup.js';
import { benchStores } from './stores.js';
import { benchStrict, stateDirRecordMs } from './strict.js';
import { fmt, pct } from './util.js';

const args = process.argv.slice(2);
const want = (s: string) => args.length === 0 || args.includes(s);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);

console.log(`# Sequoia benchmark run ${new Date().toISOString()}`);
console.log(`node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}; medians of ${rounds} rounds\n`);

if (want('startup')) {
  const rows = await benchStartup();
  console.log(
    `## Start-up: the server to ready, the library entry, the CLI (medians of interleaved runs; load average ${loadavg()[0]?.toFixed(1)} at the end)\n`,
  );
  console.log(
    '| what | runs | wall ms | CPU ms | baseline | baseline wall ms | baseline CPU ms | wall ratio | CPU ratio | target (wall) | |',
  );
  console.log('| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const r of rows) {
    const ratio = r.ms / r.baselineMs;
    console.log(
      `| ${r.name} | ${r.runs} | ${r.ms.toFixed(1)} | ${r.cpuMs.toFixed(1)} | ${r.baseline} | ${r.baselineMs.toFixed(1)} | ${r.baselineCpuMs.toFixed(1)} | ${ratio.toFixed(2)}× | ${(r.cpuMs / r.baselineCpuMs).toFixed(2)}× | ${r.target === undefined ? '–' : `≤ ${r.target}×`} | ${r.target === undefined ? 'the bound' : ratio <= r.target ? 'met' : 'not met'} |`,
    );
  }
  console.log('');
}

if (want('core')) {
  const r = await benchCore(rounds);
  console.log(`## In-process segment next(), the same loop for each (load average ${loadavg()[0]?.toFixed(1)})\n`);
  console.log('| what | IDs/s (wall) | IDs/s (CPU time) | vs bare counter (CPU time, paired) | target |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  console.log(`| bare counter \`() => ++n\` | ${fmt(r.counter)} | ${fmt(r.counterCpu)} | 1.00× | |`);
  const [lo, hi] = r.handleRatioRange;
  console.log(
    `| Sequoia \`allocator.next()\` (tag handle, step 1,000,000) | ${fmt(r.handle)} | ${fmt(r.handleCpu)} | ${r.handleRatio.toFixed(2)}× (${lo.toFixed(2)}–${hi.toFixed(2)}) | ≥ 0.9× |`,
  );
  console.log(
    `| Sequoia \`service.next(tag)\` (tag looked up per call) | ${fmt(r.byTag)} | | ${pct(r.byTag, r.counter)} of the counter's wall rate | |\n`,
  );
}

if (want('generators')) {
  const rows = await benchGenerators({ rounds, durationMs: 400 });
  const base = rows.find((r) => r.name === 'crypto.randomUUID')?.idsPerSec ?? Number.NaN;
  console.log('## Coordination-free generators (text form), one process\n');
  console.log('| generator | IDs/s | vs crypto.randomUUID |');
  console.log('| --- | ---: | ---: |');
  for (const r of rows) console.log(`| ${r.name} | ${fmt(r.idsPerSec)} | ${(r.idsPerSec / base).toFixed(2)}× |`);
  console.log('');
}

if (want('snowflake')) {
  const rows = await benchSnowflake({ rounds });
  console.log('## Snowflake generators, one worker, one process\n');
  console.log('| generator | IDs/s | layout cap | of cap | repeats in a burst | refusals | note |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const r of rows) {
    const cap = r.capPerSecond === undefined ? '–' : fmt(r.capPerSecond);
    const of = r.ratioToCap === undefined ? '–' : pct(r.ratioToCap, 1);
    console.log(`| ${r.name} | ${fmt(r.idsPerSecond)} | ${cap} | ${of} | ${r.repeats} of ${r.burst} | ${r.refusals} | ${r.note} |`);
  }
  console.log('');
}

if (want('stores')) {
  const rows = await benchStores({ seconds: 3, concurrency: 8 });
  console.log('## Stores: segment allocations/s from 8 concurrent allocators; strict-mode IDs/s\n');
  console.log('| store | allocations/s | strict IDs/s | note |');
  console.log('| --- | ---: | ---: | --- |');
  for (const r of rows) {
    console.log(
      `| ${r.store} | ${r.allocsPerSec === undefined ? '–' : fmt(r.allocsPerSec)} | ${r.strictIdsPerSec === undefined ? '–' : fmt(r.strictIdsPerSec)} | ${r.note ?? ''} |`,
    );
  }
  console.log('');
}

if (want('ledger')) {
  const rows = await benchLedger({ rounds: Number(process.env.BENCH_LEDGER_ROUNDS ?? 5), sliceMs: 1000 });
  console.log(
    '## Range ledger: segment loads (allocate, one caller) and a strict tag (`next`, 32 callers) with and without the ledger row, interleaved rounds\n',
  );
  console.log('| store | what | ledger | calls/s | p99 ms |');
  console.log('| --- | --- | --- | ---: | ---: |');
  for (const r of rows)
    console.log(
      `| ${r.store} | ${r.mode === 'load' ? 'segment load' : 'strict tag'} | ${r.ledger ? 'on' : 'off'} | ${fmt(r.callsPerSec)} | ${r.p99Ms.toFixed(2)} |`,
    );
  console.log('');
}

if (want('strict')) {
  if (!haveWrk()) console.log("## Strict tags against the store's own primitive\n\nskipped: `wrk` is not installed\n");
  else {
    const sr = Math.max(3, Math.round(rounds * 0.6));
    const before = await stateDirRecordMs();
    const rows = await benchStrict({ rounds: sr, seconds: Number(process.env.BENCH_STRICT_SECONDS ?? 5) });
    const after = await stateDirRecordMs();
    console.log(
      `## Strict tags against the store's own primitive, 50 clients (${sr} interleaved rounds; load average ${loadavg()[0]?.toFixed(1)} at the end)\n`,
    );
    console.log(
      "| store | route / primitive | req/s or ops/s | p50 ms | p99 ms | strict vs this | strict p99 vs segment p99 (primitives: vs this primitive's p99) |",
    );
    console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
    // As wrk prints them: two decimals.
    const ms = (x: number | undefined) => (x === undefined ? '' : x.toFixed(2));
    for (const r of rows) {
      if (!r.strict || !r.segment) {
        console.log(`| ${r.store} | ${r.note ?? 'no result'} | | | | | |`);
        continue;
      }
      const s = r.strict;
      const client = 'wrk -c50 -t2';
      console.log(
        `| ${r.store} | **strict tag**, \`GET /api/segment/get/{tag}\`, ${client} | **${fmt(s.rps)}** | ${s.p50ms} | ${s.p99ms} | – | **${(s.p99ms / r.segment.p99ms).toFixed(2)}×** |`,
      );
      if (r.strictBefore) {
        const b = r.strictBefore;
        console.log(
          `| ${r.store} | strict tag, build of BENCH_STRICT_BEFORE | ${fmt(b.rps)} | ${b.p50ms} | ${b.p99ms} | ${(s.rps / b.rps).toFixed(2)}× | ${(b.p99ms / r.segment.p99ms).toFixed(2)}× |`,
        );
      }
      if (r.strictTmpfs) {
        const m = r.strictTmpfs;
        console.log(
          `| ${r.store} | strict tag, state dir on tmpfs (no fsync: what the durable mark costs; not a setup to run) | ${fmt(m.rps)} | ${m.p50ms} | ${m.p99ms} | ${(s.rps / m.rps).toFixed(2)}× | ${(m.p99ms / r.segment.p99ms).toFixed(2)}× |`,
        );
      }
      console.log(
        `| ${r.store} | segment tag, same server, ${client} | ${fmt(r.segment.rps)} | ${r.segment.p50ms} | ${r.segment.p99ms} | ${(s.rps / r.segment.rps).toFixed(2)}× | 1.00× |`,
      );
      if (r.pinned) {
        const { strict: ps, segment: pg } = r.pinned;
        console.log(
          `| ${r.store} | strict tag, wrk -c50 -t1 pinned to its own CPU (the server keeps the other) | ${fmt(ps.rps)} | ${ps.p50ms} | ${ps.p99ms} | – | ${(ps.p99ms / pg.p99ms).toFixed(2)}× (vs the next row) |`,
        );
        console.log(
          `| ${r.store} | segment tag, wrk -c50 -t1 pinned | ${fmt(pg.rps)} | ${pg.p50ms} | ${pg.p99ms} | ${(ps.rps / pg.rps).toFixed(2)}× | 1.00× |`,
        );
      }
      for (const p of r.primitives ?? []) {
        const mark = p.name === r.sequence ? " (the target's yardstick)" : '';
        console.log(
          Number.isFinite(p.opsPerSec)
            ? `| ${r.store} | ${p.name}${mark} | ${fmt(p.opsPerSec)} | ${ms(p.p50ms)} | ${ms(p.p99ms)} | ${(s.rps / p.opsPerSec).toFixed(2)}× | ${p.p99ms === undefined ? '' : `${(s.p99ms / p.p99ms).toFixed(2)}×`} |`
            : `| ${r.store} | ${p.name}${mark} | could not run | | | | |`,
        );
      }
    }
    const f = (x: number) => x.toFixed(1);
    console.log(
      `\nOne durable state-dir record (the per-batch fsync every strict answer waits for), 200 in a row: p50 ${f(before.p50)} ms, p99 ${f(before.p99)} ms before the section, p50 ${f(after.p50)} ms, p99 ${f(after.p99)} ms after it.`,
    );
    console.log('');
  }
}

if (want('latency')) {
  const r = haveWrk() ? await benchLatency({ rounds: 3 }) : { note: '`wrk` is not installed' };
  console.log('## Store latency hidden by the double buffer (HTTP single ID, wrk -c50)\n');
  if ('note' in r) console.log(`skipped: ${r.note}\n`);
  else {
    console.log(`| store | added latency | p99 without | p99 with | ratio | req/s without | req/s with | segment loads (without / with) |`);
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    console.log(
      `| ${r.store} | ${r.latencyMs} ms each way | ${r.base.p99ms} ms | ${r.slow.p99ms} ms | ${r.p99Ratio.toFixed(2)}× | ${fmt(r.base.rps)} | ${fmt(r.slow.rps)} | ${r.loadsBase} / ${r.loadsSlow} |\n`,
    );
  }
}

if (want('http')) {
  if (!haveWrk()) {
    console.log('## HTTP\n\nskipped: `wrk` is not installed (`apt-get install wrk`)\n');
  } else {
    const hr = Math.max(3, Math.round(rounds * 0.6));
    const r = await benchHttp(hr, 5);
    console.log(`## HTTP (wrk -t2 -c50 -d5s, ${hr} rounds, wrk on the same 2 cores)\n`);
    console.log('| route | requests/s | p50 ms | p99 ms | vs bare node:http (rps) | p99 vs bare |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
    console.log(`| bare node:http counter | ${fmt(r.bareSingle.rps)} | ${r.bareSingle.p50ms} | ${r.bareSingle.p99ms} | 100% | 1.00× |`);
    console.log(
      `| Sequoia \`GET /api/segment/get/{tag}\` | ${fmt(r.seqSingle.rps)} | ${r.seqSingle.p50ms} | ${r.seqSingle.p99ms} | ${pct(r.seqSingle.rps, r.bareSingle.rps)} | ${(r.seqSingle.p99ms / r.bareSingle.p99ms).toFixed(2)}× |`,
    );
    console.log(
      `| bare node:http counter, with the client's \`Authorization\` header | ${fmt(r.bareSingleAuth.rps)} | ${r.bareSingleAuth.p50ms} | ${r.bareSingleAuth.p99ms} | 100% | 1.00× |`,
    );
    console.log(
      `| Sequoia \`GET /api/segment/get/{tag}\`, client tokens + rate limit | ${fmt(r.securedSingle.rps)} | ${r.securedSingle.p50ms} | ${r.securedSingle.p99ms} | ${pct(r.securedSingle.rps, r.bareSingleAuth.rps)} | ${(r.securedSingle.p99ms / r.bareSingleAuth.p99ms).toFixed(2)}× |`,
    );
    console.log(
      `| bare node:http, 1000 numbers as JSON | ${fmt(r.bareBatch.rps)} (${fmt(r.bareBatch.rps * 1000)} IDs/s) | ${r.bareBatch.p50ms} | ${r.bareBatch.p99ms} | 100% | 1.00× |`,
    );
    console.log(
      `| Sequoia \`GET /v1/segment/{tag}?count=1000\` | ${fmt(r.seqBatch.rps)} (${fmt(r.seqBatch.rps * 1000)} IDs/s) | ${r.seqBatch.p50ms} | ${r.seqBatch.p99ms} | ${pct(r.seqBatch.rps, r.bareBatch.rps)} | ${(r.seqBatch.p99ms / r.bareBatch.p99ms).toFixed(2)}× |\n`,
    );
    const pr = (x: { rps: number; p99: number }) => `${pct(x.rps, 1)} of bare, p99 ${x.p99.toFixed(2)}×`;
    console.log(
      `Paired per round (each Sequoia run against the bare run just before it, median of the rounds): single ID ${pr(r.paired.single)}; with client tokens + rate limit ${pr(r.paired.secured)}; 1000 per request ${pr(r.paired.batch)}.\n`,
    );
  }
}

if (want('batches')) {
  if (!haveWrk()) console.log('## Batches next to single IDs\n\nskipped: `wrk` is not installed\n');
  else {
    const rows = await benchBatches({ rounds: Math.min(rounds, 3) });
    console.log(
      `## Batches next to single IDs (single-ID p99, wrk -c10, next to 20 connections of load; one process; load average ${loadavg()[0]?.toFixed(1)})\n`,
    );
    console.log('| server | load next to it | single IDs/s | single p50 ms | single p99 ms | load requests/s |');
    console.log('| --- | --- | ---: | ---: | ---: | ---: |');
    for (const r of rows) {
      console.log(
        `| ${r.server} | ${r.load === 'alone' ? 'none' : `20 × \`${r.load}\``} | ${fmt(r.single.rps)} | ${r.single.p50ms.toFixed(2)} | ${r.single.p99ms.toFixed(2)} | ${r.loadRps === undefined ? '–' : fmt(r.loadRps)} |`,
      );
    }
    console.log('');
  }
}

if (want('client')) {
  const rows = await benchClient({ rounds });
  console.log('## Client SDK (sequoia-id/client) against a real server\n');
  console.log('| what | IDs/s | vs bare counter | vs Redis INCR per ID |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${fmt(r.idsPerSec)} | ${pct(r.vsCounter, 1)} | ${Number.isNaN(r.vsIncr) ? '–' : `${r.vsIncr.toFixed(1)}×`} |`,
    );
  }
  console.log('');
}

if (want('cluster')) {
  if (!haveWrk()) console.log('## Multi-core server\n\nskipped: `wrk` is not installed\n');
  else {
    const rows = await benchCluster({ rounds: Math.max(3, Math.round(rounds * 0.6)) });
    console.log('## Multi-core server: single-ID requests, wrk -c100, 2 workers each\n');
    console.log('| server | requests/s | p50 ms | p99 ms | vs bare cluster | p99 vs bare |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
    for (const r of rows) {
      console.log(
        `| ${r.name} | ${fmt(r.rps)} | ${r.p50ms} | ${r.p99ms} | ${pct(r.vsBare, 1)} | ${Number.isNaN(r.p99VsBare) ? '–' : `${r.p99VsBare.toFixed(2)}×`} |`,
      );
    }
    console.log('');
  }
}

if (want('metrics')) {
  if (!haveWrk()) console.log('## Metrics cost\n\nskipped: `wrk` is not installed\n');
  else {
    const mr = Math.max(5, rounds);
    printMetricsBench(await benchMetrics(mr), mr);
  }
}

if (want('offloop')) {
  const r = await benchOffLoop({ rounds: Math.min(rounds, 3) });
  console.log('## SQLite and the state dir off the event loop (issue 28): before / after, wrk -c50\n');
  if ('note' in r) console.log(`${r.note}\n`);
  else {
    console.log(
      '| build | single ID req/s | p50 ms | p99 ms | segment loads | /v1/uuid with state.db locked: req/s | p99 ms | max ms | errors |',
    );
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const x of r) {
      console.log(
        `| ${x.build} | ${fmt(x.rps)} | ${x.p50ms} | ${x.p99ms} | ${x.loads} | ${fmt(x.lockedRps)} | ${x.lockedP99ms} | ${x.lockedMaxMs} | ${x.lockedErrors} |`,
      );
    }
    console.log('');
  }
}

if (want('reserve')) {
  const rows = await benchReserve();
  console.log(
    `## Client reserve: cover after the only server is SIGKILLed, and store load over 20 s of steady drawing (SQLite, step 1,000, reserve 10 s of the rate; load average ${loadavg()[0]?.toFixed(1)})\n`,
  );
  console.log(
    '| rate IDs/s | reserve | IDs drawn | store allocations | IDs taken from the store | reserve held | cover after the kill | served from reserve |',
  );
  console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    const cover = Number.isNaN(r.coverMs) ? `> ${5 * r.seconds} s` : `${(r.coverMs / 1000).toFixed(1)} s`;
    console.log(
      `| ${r.rate} | ${r.reserve ? `${r.seconds} s` : 'off'} | ${r.drawn} | ${r.allocations} | ${r.storeIds} | ${r.reserveIds} | ${cover} | ${r.servedFromReserve} |`,
    );
  }
  console.log('');
}

if (want('audit')) {
  const r = await benchAudit();
  const d = await benchAuditDb();
  const my = await benchAuditMysql();
  const load = loadavg()[0]?.toFixed(1);
  console.log(
    `## sequoia audit: ${fmt(r.ids)} shuffled IDs (one duplicate planted), from a file, PostgreSQL and MySQL/MariaDB, one process each (load average ${load})\n`,
  );
  console.log('| input | IDs | wall s | IDs/s | CPU s | IDs per CPU s | peak RSS MiB | spilled runs | duplicates found | target |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  const row = (what: string, x: AuditBenchResult, target: string) =>
    `| ${what} | ${fmt(x.ids)} | ${x.seconds.toFixed(1)} | ${fmt(x.idsPerSecond)} | ${x.cpuSeconds === undefined ? 'n/a' : x.cpuSeconds.toFixed(1)} | ${x.cpuSeconds ? fmt(x.ids / x.cpuSeconds) : 'n/a'} | ${x.peakRssMiB === undefined ? 'n/a' : x.peakRssMiB.toFixed(0)} | ${x.spilledRuns} | ${x.duplicatesFound} | ${target} |`;
  const printBound = (line: string) => line !== '' && console.log(line);
  const bound = (what: string, ids: number, seconds: number | undefined) =>
    seconds === undefined ? '' : `| ${what} | ${fmt(ids)} | ${seconds.toFixed(1)} | ${fmt(ids / seconds)} | | | | | | the bound |`;
  console.log(row('a file (the baseline)', r, ''));
  if (d === undefined) console.log('| `--db postgres://… --query` | skipped: no PostgreSQL answers | | | | | | | | |');
  else {
    console.log(row("`--db postgres://… --query 'SELECT id FROM t'`", d.db, '≥ 1.5 M IDs/s, peak RSS ≤ 256 MiB'));
    printBound(bound('PostgreSQL alone: `psql -c "\\copy (SELECT id FROM t) to /dev/null"`', d.db.ids, d.copySeconds));
    printBound(bound('the driver alone: pg and pg-copy-streams draining the same COPY in node', d.db.ids, d.driverSeconds));
  }
  if (my === undefined) console.log('| `--db mysql://… --query` | skipped: no MySQL answers | | | | | | | | |');
  else {
    console.log(row("`--db mysql://… --query 'SELECT id FROM t'`", my.db, "the file path's speed, peak RSS ≤ 256 MiB"));
    printBound(bound("MariaDB alone: `mariadb --batch --skip-column-names -e 'SELECT id FROM t' > /dev/null`", my.db.ids, my.copySeconds));
    printBound(bound("the driver alone: mysql2's row stream in node, rows as arrays of text, counted", my.db.ids, my.driverSeconds));
  }
  for (const [name, x] of [
    ['PostgreSQL', d],
    ['MySQL', my],
  ] as const)
    if (x !== undefined) console.log(`\n--db ${name} vs the file: ${(x.db.idsPerSecond / r.idsPerSecond).toFixed(2)}× the file's IDs/s.`);
  console.log('');
}
