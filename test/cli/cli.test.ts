import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sequoia } from '../helpers/cli.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'sequoia-cli-'));

describe('sequoia CLI', () => {
  it('serve: each bad field gets its own message naming the field and its source; exit 2', () => {
    const r = sequoia(['serve', '--port', '70000', '--log-level', 'loud'], { SEQUOIA_MAX_STEP: '-5' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/port \(from --port\): must be at most 65535/);
    expect(r.stderr).toMatch(/logLevel \(from --log-level\): must be one of/);
    expect(r.stderr).toMatch(/maxStep \(from SEQUOIA_MAX_STEP\)/);
    expect(r.stderr).not.toMatch(/\bat .*\.js:\d+/);
  });

  it('serve: a config file with an unknown or bad field is refused by name', () => {
    const dir = tmp();
    const file = join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ port: 'eighty', colour: 'red' }));
    const r = sequoia(['serve', '--config', file]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/colour \(from .*c\.json\): unknown field/);
    expect(r.stderr).toMatch(/port \(from .*c\.json\)/);
    writeFileSync(file, '{not json');
    const r2 = sequoia(['serve', '--config', file]);
    expect(r2.status).toBe(2);
    expect(r2.stderr).toMatch(/cannot read/);
  });

  it('unknown commands and options exit 2', () => {
    expect(sequoia(['frobnicate']).status).toBe(2);
    expect(sequoia(['tag', 'list', '--bogus']).status).toBe(2);
    expect(sequoia(['--version']).status).toBe(0);
  });

  it('tag create | list | update | delete, with store from flag or env', () => {
    const dir = tmp();
    const store = `sqlite:${join(dir, 'ids.db')}`;
    const env = { SEQUOIA_STATE_DIR: join(dir, 'state') };
    const c = sequoia(['tag', 'create', 'order', '--step', '50', '--start', '1000', '--description', 'orders', '--store', store], env);
    expect(c.status).toBe(0);
    expect(c.stdout).toMatch(/created order: next ID 1000, step 50/);
    expect(sequoia(['tag', 'create', 'order', '--store', store], env).status).toBe(2);
    expect(sequoia(['tag', 'create', 'bad name', '--store', store], env).status).toBe(2);
    expect(sequoia(['tag', 'create', 'x', '--step', '0', '--store', store], env).status).toBe(2);
    expect(sequoia(['tag', 'create', 'x', '--start', '1.5', '--store', store], env).status).toBe(2);
    const list = sequoia(['tag', 'list', '--json'], { ...env, SEQUOIA_STORE: store });
    expect(JSON.parse(list.stdout)).toMatchObject([{ tag: 'order', maxId: '1000', step: 50, description: 'orders' }]);
    expect(sequoia(['tag', 'update', 'order', '--step', '75', '--store', store], env).stdout).toMatch(/step 75/);
    expect(sequoia(['tag', 'update', 'nope', '--step', '75', '--store', store], env).status).toBe(2);
    expect(sequoia(['tag', 'delete', 'order', '--store', store], env).status).toBe(0);
    expect(sequoia(['tag', 'list', '--store', store], env).stdout).not.toMatch(/order/);
  });

  it('fence raises max_id and refuses a bound below the local high-water mark', () => {
    const dir = tmp();
    const store = `sqlite:${join(dir, 'ids.db')}`;
    const env = { SEQUOIA_STATE_DIR: join(dir, 'state') };
    sequoia(['tag', 'create', 't', '--store', store], env);
    const f = sequoia(['fence', 't', '--to', '5000', '--store', store], env);
    expect(f.status).toBe(0);
    expect(f.stdout).toMatch(/next ID 5000 \(fence epoch 1\)/);
    expect(sequoia(['fence', 't', '--to', 'lots', '--store', store], env).status).toBe(2);
    expect(sequoia(['fence', 't', '--store', store], env).status).toBe(2);
  });

  it('a store that cannot be opened exits 1 with a message, not a stack', () => {
    const dir = tmp();
    writeFileSync(join(dir, 'file'), '');
    const r = sequoia(['tag', 'list', '--store', `sqlite:${join(dir, 'file', 'ids.db')}`], { SEQUOIA_STATE_DIR: join(dir, 's') });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/STORE_UNAVAILABLE/);
    expect(r.stderr).not.toMatch(/\bat .*\.js:\d+/);
  });
});
