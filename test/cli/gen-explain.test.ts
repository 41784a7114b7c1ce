import { validate as uuidValidate, version as uuidVersion } from 'uuid';
import { ObjectId } from 'bson';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createBusinessNumberCodec } from '../../src/core/business-number/index.js';
import { sequoia } from '../helpers/cli.js';

describe('sequoia gen / explain', () => {
  it('gen uuid | uuid4 | ulid | objectid prints valid IDs', () => {
    const v7 = sequoia(['gen', 'uuid', '--count', '5']).stdout.trim().split('\n');
    expect(v7).toHaveLength(5);
    for (const id of v7) expect(uuidValidate(id) && uuidVersion(id) === 7).toBe(true);
    expect(uuidVersion(sequoia(['gen', 'uuid4']).stdout.trim())).toBe(4);
    expect(sequoia(['gen', 'ulid']).stdout.trim()).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    const oid = sequoia(['gen', 'objectid']).stdout.trim();
    expect(new ObjectId(oid).toHexString()).toBe(oid);
    expect(sequoia(['gen', 'nonsense']).status).toBe(2);
    expect(sequoia(['gen', 'uuid', '--count', '0']).status).toBe(2);
  });

  it('explain decodes UUIDv7, ULID and ObjectId times', () => {
    const before = Date.now();
    const id = sequoia(['gen', 'uuid']).stdout.trim();
    const d = JSON.parse(sequoia(['explain', id]).stdout) as { version: number; timestampMs: number; time: string };
    expect(d.version).toBe(7);
    expect(d.timestampMs).toBeGreaterThanOrEqual(before - 5);
    expect(d.timestampMs).toBeLessThanOrEqual(Date.now());
    const oid = new ObjectId();
    const o = JSON.parse(sequoia(['explain', oid.toHexString()]).stdout) as { timestampMs: number };
    expect(o.timestampMs).toBe(oid.getTimestamp().getTime());
    expect(sequoia(['explain', 'not-an-id']).status).toBe(2);
  });

  it('explain --format decodes a business number with the configured key', () => {
    const order = { kind: 'permuted-base32', bits: 60, key: 'cli-test-key-0123456789', width: 12, check: true } as const;
    const text = createBusinessNumberCodec(order).encode(123456n);
    const env = { SEQUOIA_FORMATS: JSON.stringify({ order }) };
    const r = sequoia(['explain', text, '--format', 'order'], env);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ value: '123456' });
    // a mistyped symbol is caught by the check symbol
    const typo = (text[0] === '1' ? '2' : '1') + text.slice(1);
    expect(sequoia(['explain', typo, '--format', 'order'], env).status).toBe(2);
    expect(sequoia(['explain', '0001', '--format', 'base62']).stdout).toMatch(/"value": "1"/);
  });

  it('gen segment draws from the store and gives the rest back, so the next draw continues', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-gen-'));
    const env = { SEQUOIA_STORE: `sqlite:${join(dir, 'ids.db')}`, SEQUOIA_STATE_DIR: join(dir, 'state') };
    expect(sequoia(['tag', 'create', 'inv', '--step', '100'], env).status).toBe(0);
    const a = sequoia(['gen', 'segment', '--tag', 'inv', '--count', '3'], env);
    expect(a.status).toBe(0);
    expect(a.stdout.trim().split('\n')).toEqual(['1', '2', '3']);
    expect(sequoia(['gen', 'segment', '--tag', 'inv', '--count', '2'], env).stdout.trim().split('\n')).toEqual(['4', '5']);
    expect(sequoia(['gen', 'segment', '--count', '2'], env).status).toBe(2);
    expect(sequoia(['gen', 'segment', '--tag', 'nope'], env).status).toBe(2);
  });

  it('bench measures the generators against their limits', () => {
    const r = sequoia(['bench']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/segment next\(\) \(buffered\)\s+[\d.]+ M\/s\s+\d+% of a bare counter/);
    expect(r.stdout).toMatch(/UUIDv7 text .*× crypto\.randomUUID/);
    expect(r.stdout).toMatch(/snowflake twitter .*% of the layout cap/);
  });
});
