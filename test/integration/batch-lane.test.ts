/**
 * Issue 28, item 10, on a real process: large batches must not starve single
 * IDs. The mechanism, not its speed (that is measured in BENCHMARKS.md,
 * "Batches next to single IDs"): 40 connections ask `count=10000` and, right
 * after, one asks a single ID. Every ID of a tag comes from one counter in
 * the order requests are served, so the single ID tells how many batches
 * were served before it: before the fix, every batch that arrived with it
 * (all of them); now a batch waits its turn in a queue served between turns
 * of the event loop, and the single request is answered ahead of the queued
 * batches. Every answer is still complete, and no ID repeats.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { type ServerProcess, startServe } from '../helpers/cli.js';

const running: ServerProcess[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function connected(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1', noDelay: true });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

/** The body of the one answer on `s` (status 200 expected), read to its Content-Length. */
function answer(s: Socket): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString('latin1');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? NaN);
      if (buf.length - end - 4 < length) return;
      s.off('data', onData);
      resolve({ status: Number(head.split(' ')[1]), body: buf.subarray(end + 4, end + 4 + length).toString('utf8') });
    };
    s.on('data', onData);
    s.once('error', reject);
    setTimeout(() => reject(new Error(`no complete answer within 30 s (${buf.length} bytes)`)), 30_000).unref();
  });
}

it('a single-ID request is answered ahead of the 40 batches of 10,000 that arrived just before it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-lane-'));
  dirs.push(dir);
  const server = await startServe(['--store', `sqlite:${join(dir, 'ids.db')}`, '--state-dir', join(dir, 'state')]);
  running.push(server);
  const created = await fetch(`${server.url}/v1/tags`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"tag":"lane","step":1000000}',
  });
  expect(created.status).toBe(201);
  // The first range [1, 1000001) holds every ID asked below: no store round trip in the middle.
  expect((await fetch(`${server.url}/v1/segment/lane`)).status).toBe(200);

  const port = Number(new URL(server.url).port);
  const batches = await Promise.all(Array.from({ length: 40 }, () => connected(port)));
  const single = await connected(port);
  // Every connection accepted and in use (keep-alive) before the burst, as a load generator's are.
  await Promise.all(
    [...batches, single].map((s) => {
      const a = answer(s);
      s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      return a;
    }),
  );
  const answers = batches.map(answer);
  // When each batch's answer began to arrive: one that began before the single was even sent was served before it could be.
  const firstByteAt = batches.map(() => Number.POSITIVE_INFINITY);
  batches.forEach((s, i) => s.once('data', () => (firstByteAt[i] = performance.now())));
  const singleAnswer = answer(single);
  for (const s of batches) s.write('GET /v1/segment/lane?count=10000 HTTP/1.1\r\nHost: x\r\n\r\n');
  // The batches are on their way first (and, before the fix, being served back to back when the single arrives).
  await new Promise((r) => setTimeout(r, 5));
  single.write('GET /api/segment/get/lane HTTP/1.1\r\nHost: x\r\n\r\n');
  // On a loaded machine the 5 ms may be far longer: batches answered by then say nothing about the single's turn.
  const sentAt = performance.now();

  const one = await singleAnswer;
  expect(one.status).toBe(200);
  const singleId = BigInt(one.body);
  const all = await Promise.all(answers);
  const ids = new Set<bigint>([singleId]);
  let servedBefore = 0;
  for (const [i, a] of all.entries()) {
    expect(a.status).toBe(200);
    const got = (JSON.parse(a.body) as { ids: string[] }).ids.map(BigInt);
    expect(got).toHaveLength(10_000);
    for (const id of got) ids.add(id);
    if (got[0]! < singleId && firstByteAt[i]! > sentAt) servedBefore++;
  }
  expect(ids.size).toBe(40 * 10_000 + 1);
  // Before the fix: the single request waited for every batch read with it (servedBefore ≈ 40); batches
  // already answering when it was sent are not counted.
  expect(servedBefore).toBeLessThanOrEqual(3);
  for (const s of [...batches, single]) s.destroy();
}, 60_000);
