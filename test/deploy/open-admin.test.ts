/**
 * Safe as shipped (DESIGN.md, "Deployment and migration"): `serve` listening
 * beyond loopback without an admin token refuses to start, exit 2, naming
 * `--admin-token` and the explicit opt-out (`--allow-open-admin`,
 * SEQUOIA_ALLOW_OPEN_ADMIN); with a token it starts, and with the opt-out it
 * starts and logs a warning. Real processes: the built CLI, started with node
 * (npx would not pass signals), one process and `--workers 2`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FIELDS } from '../../src/app/config.js';
import { isLoopbackHost } from '../../src/server/listen-check.js';
import { BIN, PACKAGED_BIN, type ServerProcess, assertBuilt, cleanEnv, startServe } from '../helpers/cli.js';

const dirs: string[] = [];
const running: ServerProcess[] = [];
afterAll(async () => {
  for (const s of running) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  await Promise.all(running.map((s) => s.exited));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A fresh state dir and SQLite store of this test's own. */
function place(): { dir: string; args: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'sequoia-open-admin-'));
  dirs.push(dir);
  const state = join(dir, 'state');
  return { dir: state, args: ['--state-dir', state, '--store', `sqlite:${join(dir, 'ids.db')}`] };
}

/**
 * Runs `serve` until it exits or says it listens (then it is stopped): the
 * exit status and output. A server that listens where it must refuse shows as
 * status 'listening', not as a hung test.
 */
function runUntilExitOrListening(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ status: number | string; output: string }> {
  assertBuilt();
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    env: { ...cleanEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve) => {
    const onData = (d: Buffer): void => {
      output += d.toString();
      if (/"msg":"listening"/.test(output)) {
        child.kill('SIGKILL');
        resolve({ status: 'listening', output });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code, signal) => resolve({ status: code ?? signal ?? -1, output }));
  });
}

/** The pino lines of a server's output. */
function logLines(output: string): { level: number; msg: string; role?: string; host?: string }[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; role?: string; host?: string });
}

async function stop(s: ServerProcess): Promise<number | string> {
  s.child.kill('SIGTERM');
  return s.exited;
}

describe('serve beyond loopback without an admin token', () => {
  it.each([
    ['--host 0.0.0.0', ['--host', '0.0.0.0'], {}],
    ['--host ::', ['--host', '::'], {}],
    ['SEQUOIA_HOST=0.0.0.0 (as deploy/ sets it)', [], { SEQUOIA_HOST: '0.0.0.0' }],
    ['a host name', ['--host', 'sequoia.example'], {}],
    ['--workers 2', ['--host', '0.0.0.0', '--workers', '2'], {}],
  ])('%s: exits 2 naming --admin-token and the opt-out, before it takes anything', async (_name, hostArgs, env) => {
    const p = place();
    const r = await runUntilExitOrListening([...p.args, ...hostArgs], env);
    expect(r.status, r.output).toBe(2);
    expect(r.output).toContain(FIELDS.adminToken.flag);
    expect(r.output).toContain(`${FIELDS.allowOpenAdmin.flag} (env ${FIELDS.allowOpenAdmin.env}=true)`);
    expect(r.output).toMatch(/beyond loopback/);
    // One message, no stack, and nothing taken: the state dir was never made.
    expect(r.output.match(/beyond loopback/g)).toHaveLength(1);
    expect(r.output).not.toMatch(/\n\s+at /);
    expect(existsSync(p.dir)).toBe(false);
  });

  it('a bad opt-out value is a configuration error naming the field', async () => {
    const r = await runUntilExitOrListening([...place().args, '--host', '0.0.0.0', '--allow-open-admin', 'maybe']);
    expect(r.status, r.output).toBe(2);
    expect(r.output).toContain('allowOpenAdmin (from --allow-open-admin): must be true or false');
  });

  it('with an admin token it starts on 0.0.0.0, and the admin routes want the token', async () => {
    const s = await startServe([...place().args, '--host', '0.0.0.0', '--admin-token', 'open-admin-test-token']);
    running.push(s);
    const url = s.url.replace('0.0.0.0', '127.0.0.1');
    const body = JSON.stringify({ tag: 'open-admin-guarded', step: 10 });
    const anon = await fetch(`${url}/v1/tags`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(anon.status).toBe(401);
    const ok = await fetch(`${url}/v1/tags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer open-admin-test-token' },
      body,
    });
    expect(ok.status).toBe(201);
    expect(logLines(s.output()).filter((l) => l.level >= 40)).toEqual([]);
    expect(await stop(s)).toBe(0);
  });

  it('on loopback it starts without a token, and warns of nothing', async () => {
    const s = await startServe([...place().args, '--host', '127.0.0.1']);
    running.push(s);
    expect(logLines(s.output()).filter((l) => /admin token/.test(l.msg))).toEqual([]);
    expect(await stop(s)).toBe(0);
  });

  it.each([
    ['the flag alone', ['--allow-open-admin'], {}],
    ['the environment', [], { SEQUOIA_ALLOW_OPEN_ADMIN: 'true' }],
  ])('opted out with %s: it starts on 0.0.0.0 and logs a warning', async (_name, extra, env) => {
    const s = await startServe([...place().args, '--host', '0.0.0.0', ...extra], env);
    running.push(s);
    const warnings = logLines(s.output()).filter((l) => l.level === 40 && /without an admin token/.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain(FIELDS.allowOpenAdmin.flag);
    expect(warnings[0]!.host).toBe('0.0.0.0');
    // Open as asked: a tag is made without a token.
    const r = await fetch(`${s.url.replace('0.0.0.0', '127.0.0.1')}/v1/tags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tag: 'open-admin-open', step: 10 }),
    });
    expect(r.status).toBe(201);
    expect(await stop(s)).toBe(0);
  });

  it('--workers 2 opted out, from the bundle the shipped files run: the primary warns once, the workers do not repeat it', async () => {
    const s = await startServe([...place().args, '--host', '0.0.0.0', '--workers', '2', '--allow-open-admin'], {}, PACKAGED_BIN);
    running.push(s);
    const warnings = logLines(s.output()).filter((l) => /without an admin token/.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.role).toBe('primary');
    expect(await stop(s)).toBe(0);
  });
});

describe('isLoopbackHost', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.3.2.1', true],
    ['localhost', true],
    ['LOCALHOST', true],
    ['::1', true],
    ['[::1]', true],
    ['0:0:0:0:0:0:0:1', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.5', false],
    ['::ffff:10.0.0.5', false],
    ['sequoia.internal', false],
    ['localhost.example', false],
  ])('%s → %s', (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });
});
