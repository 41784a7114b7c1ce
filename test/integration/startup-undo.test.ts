/**
 * A start-up undoes itself (issue 41): a step that fails releases everything
 * the steps before it took, in reverse, once. The failure is injected late —
 * the HTTP app cannot read its TLS key, after the store was opened, the state
 * dir locked and a snowflake worker id leased — and early (a state dir that
 * cannot be opened). Then: the port is free again, the state dir's lock is
 * gone (a second start on the same dir succeeds), and each leased worker id
 * was released in the store exactly once. Real SQLite store, real state dir,
 * the built code.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServeConfig, resolveConfig } from '../../src/app/config.js';
import type { startServer } from '../../src/app/start-server.js';
import type { openBackend } from '../../src/app/stores.js';
import { getLayout } from '../../src/core/snowflake/layout.js';
import { ensureDist } from '../contract/ensure-dist.js';

let start: typeof startServer;
let resolve: typeof resolveConfig;
let open: typeof openBackend;
const dirs: string[] = [];

beforeAll(async () => {
  const dist = await ensureDist();
  const load = async <T>(p: string) => (await import(pathToFileURL(join(dist, p)).href)) as T;
  start = (await load<{ startServer: typeof startServer }>('app/start-server.js')).startServer;
  resolve = (await load<{ resolveConfig: typeof resolveConfig }>('app/config.js')).resolveConfig;
  open = (await load<{ openBackend: typeof openBackend }>('app/stores.js')).openBackend;
}, 300_000);

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'sequoia-undo-'));
  dirs.push(d);
  return d;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen({ host: '127.0.0.1', port: 0 }, r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Resolves when the port can be bound again (and lets it go). */
async function bindable(port: number): Promise<boolean> {
  const s = createServer();
  const ok = await new Promise<boolean>((r) => {
    s.once('error', () => r(false));
    s.listen({ host: '127.0.0.1', port }, () => r(true));
  });
  if (ok) await new Promise<void>((r) => s.close(() => r()));
  return ok;
}

function config(dir: string, port: number): ServeConfig {
  return resolve(
    { store: `sqlite:${join(dir, 'ids.db')}`, stateDir: join(dir, 'state'), host: '127.0.0.1', port, logLevel: 'silent' },
    {},
    undefined,
  );
}

describe('a start that fails undoes what it did', () => {
  it('late (the TLS key cannot be read): port free, state dir unlocked, each worker id released once', async () => {
    const dir = tmp();
    const port = await freePort();
    const good = config(dir, port);
    // Injected past the config check: the files vanish between the check and the start.
    const bad: ServeConfig = { ...good, tlsCert: join(dir, 'gone.crt'), tlsKey: join(dir, 'gone.key') };
    await expect(start(bad)).rejects.toThrow(/ENOENT/);

    expect(await bindable(port)).toBe(true);
    const backend = await open(good.store);
    const leases = backend.leases()!;
    try {
      await leases.init();
      const space = getLayout('twitter').spaceKey;
      const held = await leases.holdings(space);
      expect(held.length).toBeGreaterThan(0); // the failure came after the lease: there was one to release
      for (const h of held) {
        expect(h.released).toBe(true);
        const rows = await leases.entries(space, h.workerId);
        expect(rows.filter((r) => r.generation === h.generation && r.kind === 'release')).toHaveLength(1);
      }
    } finally {
      await leases.close();
      await backend.segments.close();
    }

    // The state dir's lock was let go and its store binding kept: the same dir and port start.
    const server = await start(good);
    try {
      expect(server.url).toBe(`http://127.0.0.1:${port}`);
      expect((await fetch(`${server.url}/v1/snowflake`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('early (the state dir cannot be opened): the store is closed and the port free', async () => {
    const dir = tmp();
    const port = await freePort();
    const good = config(dir, port);
    // A file where the state dir should be: nothing can be opened under it.
    const blocked = join(dir, 'blocked');
    writeFileSync(blocked, '');
    chmodSync(blocked, 0o400);
    await expect(start({ ...good, stateDir: join(blocked, 'state') })).rejects.toThrow();
    expect(await bindable(port)).toBe(true);
    // The store was opened at once with the state dir; closed again, its file takes a new server.
    const server = await start(good);
    try {
      expect((await fetch(`${server.url}/v1/snowflake`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
