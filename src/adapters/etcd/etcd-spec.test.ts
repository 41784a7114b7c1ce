import { expect, it } from 'vitest';
import { etcdClientOptions } from './etcd-worker-lease-store.js';
import { DEFAULT_ETCD_PREFIX, parseEtcdSpec } from './etcd-spec.js';
import { parseWorkerIdProvider } from '../../app/worker-id-provider-spec.js';

it('parses members, prefix, TLS files and user', () => {
  expect(parseEtcdSpec('etcd://127.0.0.1:2379')).toEqual({
    hosts: ['127.0.0.1:2379'],
    prefix: DEFAULT_ETCD_PREFIX,
    caFile: undefined,
    certFile: undefined,
    keyFile: undefined,
    user: undefined,
    password: undefined,
  });
  expect(parseEtcdSpec('etcd://app:p%40ss:w@etcd-0:2379,etcd-1:2379,[::1]:2379/ids/prod/?cacert=/ca.pem&cert=/c.pem&key=/k.pem')).toEqual({
    hosts: ['etcd-0:2379', 'etcd-1:2379', '[::1]:2379'],
    prefix: '/ids/prod',
    caFile: '/ca.pem',
    certFile: '/c.pem',
    keyFile: '/k.pem',
    user: 'app',
    password: 'p@ss:w',
  });
  expect(parseWorkerIdProvider('etcd://h:2379/p')).toMatchObject({ kind: 'etcd', etcd: { hosts: ['h:2379'], prefix: '/p' } });
});

it('refuses what is not the form, naming the form', () => {
  for (const bad of [
    'etcd://',
    'etcd://h',
    'etcd://h:99999',
    'etcd://h:1/',
    'etcd://h:1/a b',
    'etcd://h:1?x=1',
    'etcd://h:1?cacert=',
    'etcd://h:1?cert=/c.pem&key=/k.pem',
    'etcd://h:1?cacert=/ca&cert=/c.pem',
    'etcd://user@h:1',
    'etcd://:pw@h:1',
  ]) {
    expect(() => parseEtcdSpec(bad), bad).toThrow(/expected etcd:\/\/\[USER:PASSWORD@\]HOST:PORT/);
  }
});

it('hands TLS files and the user to the etcd client as it expects them; plain http without a CA', () => {
  const files: Record<string, string> = { '/ca.pem': 'CA', '/c.pem': 'CERT', '/k.pem': 'KEY' };
  const read = (p: string): Buffer => {
    const f = files[p];
    if (f === undefined) throw new Error('ENOENT');
    return Buffer.from(f);
  };
  const o = etcdClientOptions(parseEtcdSpec('etcd://app:secret@e1:2379,e2:2379?cacert=/ca.pem&cert=/c.pem&key=/k.pem'), read);
  expect(o.hosts).toEqual(['https://e1:2379', 'https://e2:2379']);
  expect(o.credentials).toEqual({ rootCertificate: Buffer.from('CA'), certChain: Buffer.from('CERT'), privateKey: Buffer.from('KEY') });
  expect(o.auth).toEqual({ username: 'app', password: 'secret' });
  const plain = etcdClientOptions(parseEtcdSpec('etcd://e1:2379'), read);
  expect(plain.hosts).toEqual(['http://e1:2379']);
  expect(plain.credentials).toBeUndefined();
  expect(plain.auth).toBeUndefined();
  expect(() => etcdClientOptions(parseEtcdSpec('etcd://e1:2379?cacert=/missing.pem'), read)).toThrow(
    /cannot read the cacert file \/missing.pem/,
  );
});
