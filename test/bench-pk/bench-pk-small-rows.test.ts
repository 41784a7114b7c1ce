/**
 * `sequoia bench pk` with small `--rows` and the default 4 clients, on real
 * PostgreSQL (issue 40 item 9): a slice of 4 rows is one statement, and the
 * 3 clients left without rows made empty "statements" timed at 0 ms, which
 * put the p50 at 0.00 ms beside a p99 of 30 ms. The percentiles are taken over
 * the statements actually run, and the report says how many.
 */
import { expect, it } from 'vitest';
import { POSTGRES_URL, probePostgres, uniqueName } from '../contract/backends.js';
import { sequoia } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';

const describePg = await describeWithService('PostgreSQL', probePostgres);

describePg('sequoia bench pk: small --rows on PostgreSQL', () => {
  it('40 rows in 10 slices by 4 clients: 10 statements per kind, p50 and p99 over them only', () => {
    const scratch = uniqueName('pk_small');
    const args = ['bench', 'pk', '--db', POSTGRES_URL, '--scratch', scratch, '--rows', '40', '--warmup', '0', '--kinds', 'sequence,uuidv4'];
    const r = sequoia([...args, '--json', '--no-progress']);
    expect(r.status, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout) as {
      options: { concurrency: number };
      results: { kind: string; rows: number; statements: number; p50Ms: number; p99Ms: number }[];
    };
    expect(result.options.concurrency).toBe(4);
    for (const k of result.results) {
      expect(k.rows, k.kind).toBe(40);
      // A real INSERT over a socket takes more than 20 µs; the empty ones took about 1 µs.
      expect(k.p50Ms, k.kind).toBeGreaterThan(0.02);
      // One statement per slice: no client's empty turn is counted.
      expect(k.statements, k.kind).toBe(10);
      expect(k.p99Ms, k.kind).toBeGreaterThanOrEqual(k.p50Ms);
    }
    const text = sequoia([...args, '--no-progress']);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/p50\/p99: one INSERT statement, over the 10 measured per kind \(up to 100 rows each/);
  });
});
