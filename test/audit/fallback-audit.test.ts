/**
 * `sequoia audit --tag` and `sequoia explain` recognise a tag's fallback IDs
 * (docs/operations.md#fallback-space, docs/audit.md), with real processes on
 * SQLite, PostgreSQL and MySQL: a server with the tag in `--fallback-tags`
 * hands out segment IDs and a fallback lease, the client's issuer (the
 * SDK's) fills the fallback space under it, the server is SIGKILLed holding
 * the lease. The audit counts those IDs apart (not foreign, not above the
 * store's max), checks each one's worker id against the fallback leases in
 * the lease ledger, and reports duplicates among them with their holder.
 */
import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FALLBACK_FLOOR,
  FallbackIssuer,
  decodeFallbackId,
  encodeFallbackId,
  fallbackLeaseSpace,
} from '../../src/core/fallback/fallback-space.js';
import type { FallbackLease } from '../../src/service/fallback-leases.js';
import { sequoia, startServe } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';
import { MYSQL_URL, POSTGRES_URL, probeMysql, probePostgres } from '../contract/backends.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sequoia-fallback-audit-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const TTL_MS = 20_000;

interface Finding {
  kind: string;
  count: number;
  examples: string[];
  ledger?: Array<{ id: string; count: number; entries: string[] }>;
}
interface AuditReport {
  clean: boolean;
  summary: { count: number; gapRate: number | null; fallback?: { count: number; distinct: number; workerIds: number; min: string } };
  findings: Finding[];
  notChecked: string[];
}

function audit(file: string, store: string, extra: string[] = []): { status: number | null; report: AuditReport; text: string } {
  const r = sequoia(['audit', file, '--tag', TAG.value, '--store', store, '--json', ...extra]);
  expect(r.status === 0 || r.status === 1, r.stderr + r.stdout).toBe(true);
  return { status: r.status, report: JSON.parse(r.stdout) as AuditReport, text: r.stdout };
}

const TAG = { value: '' };

async function scenario(name: string, store: string): Promise<string> {
  const tag = `fbaudit${randomInt(1e9)}`;
  TAG.value = tag;
  const server = await startServe([
    '--store',
    store,
    '--state-dir',
    join(dir, `${name}-state`),
    '--fallback-tags',
    tag,
    '--fallback-lease-ttl-ms',
    String(TTL_MS),
    '--workers',
    '1',
  ]);
  let segment: string[];
  let lease: FallbackLease;
  try {
    const created = await fetch(`${server.url}/v1/tags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tag, step: 100 }),
    });
    expect(created.status, server.output()).toBe(201);
    const r = await fetch(`${server.url}/v1/segment/${tag}?count=50`);
    expect(r.status, server.output()).toBe(200);
    segment = ((await r.json()) as { ids: string[] }).ids;
    const l = await fetch(`${server.url}/v1/fallback/${tag}/lease`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(l.status, server.output()).toBe(200);
    lease = (await l.json()) as FallbackLease;
  } finally {
    // Killed holding the lease: nothing reports the fallback IDs' milliseconds to the ledger.
    server.child.kill('SIGKILL');
    await server.exited;
  }

  // The client's outage: the SDK's issuer under the lease (store and client share this machine's clock).
  const issuer = new FallbackIssuer(() => Date.now());
  issuer.setGrant({ workerId: lease.workerId, notBeforeMs: lease.notBeforeMs, notAfterMs: lease.notAfterMs });
  const fallback: string[] = [];
  for (let i = 0; i < 40; i++) fallback.push(issuer.next()!.toString());
  expect(fallback.every((id) => BigInt(id) >= FALLBACK_FLOOR)).toBe(true);

  const file = join(dir, `${name}-ids.txt`);
  writeFileSync(file, [...segment, ...fallback].join('\n') + '\n');
  const clean = audit(file, store, ['--fallback-lease-ttl-ms', String(TTL_MS)]);
  expect(clean.status, clean.text).toBe(0);
  expect(clean.report.findings).toEqual([]);
  expect(clean.report.notChecked).toEqual([]);
  expect(clean.report.summary.count).toBe(90);
  expect(clean.report.summary.fallback).toMatchObject({ count: 40, distinct: 40, workerIds: 1, min: fallback[0] });
  // The gap rate is the segment IDs' own (50 consecutive IDs), not stretched up to 2^62.
  expect(clean.report.summary.gapRate).toBe(0);
  const text = sequoia(['audit', file, '--tag', tag, '--store', store, '--fallback-lease-ttl-ms', String(TTL_MS)]);
  expect(text.status, text.stdout + text.stderr).toBe(0);
  expect(text.stdout).toMatch(/fallback IDs \(from 2\^62, issued by clients while no server answered\): 40, 40 distinct/);

  // Planted: a worker id no client of the tag held, the held worker id a minute before its lease, a fallback ID written twice.
  const stranger = encodeFallbackId(Date.now() - 1000, (lease.workerId + 1) % 1024, 0).toString();
  const before = encodeFallbackId(lease.grantedAtMs - 60_000, lease.workerId, 7).toString();
  const twice = fallback[5] as string;
  writeFileSync(file, [...segment, ...fallback, stranger, before, twice].join('\n') + '\n');
  const found = audit(file, store, ['--fallback-lease-ttl-ms', String(TTL_MS)]);
  expect(found.status, found.text).toBe(1);
  expect(found.report.findings.map((f) => [f.kind, f.count])).toEqual([
    ['duplicates', 1],
    ['unheld-fallback-worker-id', 2],
  ]);
  const [dup, unheld] = found.report.findings as [Finding, Finding];
  expect(dup.ledger).toEqual([
    {
      id: twice,
      count: 2,
      entries: [expect.stringMatching(new RegExp(`^fallback ID: worker id ${lease.workerId} at .*: held by .*owner ${lease.owner}`))],
    },
  ]);
  expect(unheld.examples.map((e) => e.split(' ')[0]).sort()).toEqual([stranger, before].sort());

  // explain decodes a fallback ID by its layout, and with the tag names the client that held its worker id.
  const bare = sequoia(['explain', twice, '--layout', 'fallback']);
  expect(bare.status, bare.stderr).toBe(0);
  expect(JSON.parse(bare.stdout)).toMatchObject({
    kind: 'fallback',
    workerId: lease.workerId,
    sequence: decodeFallbackId(BigInt(twice))!.sequence,
  });
  const traced = sequoia(['explain', twice, '--tag', tag, '--store', store], { SEQUOIA_FALLBACK_LEASE_TTL_MS: String(TTL_MS) });
  expect(traced.status, traced.stderr).toBe(0);
  expect(JSON.parse(traced.stdout)).toMatchObject({
    kind: 'fallback',
    workerId: lease.workerId,
    heldBy: [{ owner: lease.owner, released: false }],
  });
  const nobody = sequoia(['explain', stranger, '--tag', tag, '--store', store], { SEQUOIA_FALLBACK_LEASE_TTL_MS: String(TTL_MS) });
  expect(JSON.parse(nobody.stdout)).toMatchObject({ kind: 'fallback', heldBy: [] });
  return fallbackLeaseSpace(tag);
}

describe('audit of fallback IDs: sqlite', () => {
  it('counts them apart, checks them against the fallback leases, reports their duplicates; explain decodes them', async () => {
    await scenario('sqlite', `sqlite:${join(dir, 'store.db')}`);
  }, 300_000);
});

const describePg = await describeWithService('PostgreSQL', probePostgres);
describePg('audit of fallback IDs: postgres', () => {
  it('counts them apart, checks them against the fallback leases, reports their duplicates; explain decodes them', async () => {
    const space = await scenario('postgres', POSTGRES_URL);
    const c = new pg.Client({ connectionString: POSTGRES_URL });
    await c.connect();
    try {
      await c.query('DELETE FROM sequoia_lease_ledger WHERE space = $1', [space]);
      await c.query('DELETE FROM sequoia_worker_lease WHERE space = $1', [space]);
    } finally {
      await c.end();
    }
  }, 300_000);
});

const describeMysql = await describeWithService('MySQL/MariaDB', probeMysql);
describeMysql('audit of fallback IDs: mysql', () => {
  it('counts them apart, checks them against the fallback leases, reports their duplicates; explain decodes them', async () => {
    const space = await scenario('mysql', MYSQL_URL);
    const c = await mysql.createConnection({ uri: MYSQL_URL });
    try {
      await c.query('DELETE FROM sequoia_lease_ledger WHERE space = ?', [space]);
      await c.query('DELETE FROM sequoia_worker_lease WHERE space = ?', [space]);
    } finally {
      await c.end();
    }
  }, 300_000);
});
