/**
 * The etcd provider over TLS with a client certificate, against a real etcd
 * (Debian's, as .ci/etcd.sh installs it) started here on free ports with a
 * CA, server and client certificate made by openssl: the spec's cacert, cert
 * and key reach the client, which then takes and renews a lease; without the
 * client certificate etcd refuses it.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { EtcdWorkerLeaseStore } from '../../src/adapters/etcd/etcd-worker-lease-store.js';
import { parseEtcdSpec } from '../../src/adapters/etcd/etcd-spec.js';
import { etcdMemberArgs } from '../helpers/etcd-member.js';
import { freePort } from '../helpers/ports.js';
import { describeWithService } from '../helpers/services.js';

const dir = mkdtempSync(join(tmpdir(), 'sequoia-etcd-tls-'));
let etcd: ChildProcess | undefined;

afterAll(async () => {
  etcd?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });

/** A CA, a server certificate for 127.0.0.1 and a client certificate, in `dir`. */
function makeCerts(): void {
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=sequoia-test-ca', '-keyout', 'ca.key', '-out', 'ca.pem');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n');
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const [name, cn] of [
    ['server', '127.0.0.1'],
    ['client', 'sequoia'],
  ] as const) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${cn}`, '-keyout', `${name}.key`, '-out', `${name}.csr`);
    ssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    );
  }
}

let port = 0;

/** etcd with client TLS and client-certificate auth, answering once a TLS client can read. */
async function startTlsEtcd(): Promise<void> {
  execFileSync('etcd', ['--version'], { stdio: 'ignore' });
  makeCerts();
  port = await freePort();
  const peer = `http://127.0.0.1:${await freePort()}`;
  const client = `https://127.0.0.1:${port}`;
  etcd = spawn(
    'etcd',
    [
      ...etcdMemberArgs('tls', join(dir, 'data'), client, peer),
      '--cert-file',
      join(dir, 'server.pem'),
      '--key-file',
      join(dir, 'server.key'),
      '--trusted-ca-file',
      join(dir, 'ca.pem'),
      '--client-cert-auth',
    ],
    { stdio: 'ignore' },
  );
  const store = new EtcdWorkerLeaseStore(parseEtcdSpec(spec()));
  try {
    for (let i = 0; ; i++) {
      try {
        await store.holdings('probe');
        return;
      } catch (e) {
        if (i > 100 || etcd.exitCode !== null) throw e;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } finally {
    await store.close();
  }
}

const spec = (withCert = true): string =>
  `etcd://127.0.0.1:${port}/sequoia-tls?cacert=${join(dir, 'ca.pem')}` +
  (withCert ? `&cert=${join(dir, 'client.pem')}&key=${join(dir, 'client.key')}` : '');

const describeTls = await describeWithService('etcd with TLS (etcd and openssl binaries)', startTlsEtcd);

describeTls('etcd provider over TLS (real etcd, client certificate)', () => {
  it('takes and renews a lease over TLS with the client certificate; without it etcd refuses', async () => {
    const store = new EtcdWorkerLeaseStore(parseEtcdSpec(spec()));
    try {
      const r = await store.acquire({ space: 'tls', owner: 'h/1/a', ttlMs: 5000, workerCount: 4 });
      expect(r).toMatchObject({ workerId: 0, generation: 1, lastTick: -1 });
      expect(await store.renew({ space: 'tls', workerId: 0, owner: 'h/1/a', generation: 1 }, 5000, 77)).toMatchObject({ lastTick: 77 });
    } finally {
      await store.close();
    }
    const noCert = new EtcdWorkerLeaseStore(parseEtcdSpec(spec(false)), { requestTimeoutMs: 1500 });
    try {
      await expect(noCert.acquire({ space: 'tls', owner: 'h/2/b', ttlMs: 5000, workerCount: 4 })).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
      });
    } finally {
      await noCert.close();
    }
  }, 60_000);
});
