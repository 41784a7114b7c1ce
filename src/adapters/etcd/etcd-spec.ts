/**
 * The etcd provider's spec: `etcd://[USER:PASSWORD@]HOST:PORT[,HOST:PORT…][/PREFIX][?cacert=PATH&cert=PATH&key=PATH]`.
 * TLS and authentication take what etcdctl takes (--cacert, --cert, --key,
 * --user USER:PASSWORD): a CA file turns TLS on (an etcd cluster signs with
 * its own CA), a client certificate and key authenticate by certificate, a
 * user and password by etcd's auth (percent-encoded in the URL, as in a
 * database URL).
 */
import { InvalidArgumentError } from '../../core/errors.js';

export const DEFAULT_ETCD_PREFIX = '/sequoia/snowflake';

export interface EtcdSpec {
  /** `host:port` of each member. */
  readonly hosts: readonly string[];
  /** Key prefix, without a trailing slash. */
  readonly prefix: string;
  /** etcdctl --cacert: TLS against this CA. */
  readonly caFile?: string | undefined;
  /** etcdctl --cert / --key: a client certificate (needs cacert). */
  readonly certFile?: string | undefined;
  readonly keyFile?: string | undefined;
  /** etcdctl --user USER:PASSWORD. */
  readonly user?: string | undefined;
  readonly password?: string | undefined;
}

const ETCD_SPEC_FORM = 'etcd://[USER:PASSWORD@]HOST:PORT[,HOST:PORT…][/PREFIX][?cacert=PATH&cert=PATH&key=PATH]';

const HOST_PORT = /^(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$/;

/** @example parseEtcdSpec('etcd://etcd-0:2379,etcd-1:2379/ids?cacert=/etc/etcd/ca.pem') */
export function parseEtcdSpec(spec: string): EtcdSpec {
  const s = spec.trim();
  const bad = (why: string) => new InvalidArgumentError(`worker id provider etcd: ${why}; expected ${ETCD_SPEC_FORM}`);
  const m = /^etcd:\/\/(?:([^@/?]*)@)?([^/?@]+)(\/[^?]*)?(?:\?(.*))?$/.exec(s);
  if (!m) throw bad('malformed');
  let user: string | undefined;
  let password: string | undefined;
  if (m[1] !== undefined) {
    const [u, ...rest] = (m[1] as string).split(':');
    try {
      user = decodeURIComponent(u ?? '');
      password = rest.length > 0 ? decodeURIComponent(rest.join(':')) : undefined;
    } catch {
      throw bad('the user and password must be percent-encoded');
    }
    if (user === '') throw bad('the user is empty');
    if (password === undefined) throw bad('a user needs a password: USER:PASSWORD@');
  }
  const hosts = (m[2] as string).split(',');
  if (!hosts.every((h) => HOST_PORT.test(h) && Number(h.slice(h.lastIndexOf(':') + 1)) <= 65535))
    throw bad('each member must be HOST:PORT');
  let prefix = m[3] ?? DEFAULT_ETCD_PREFIX;
  if (prefix.length > 1 && prefix.endsWith('/')) prefix = prefix.slice(0, -1);
  if (prefix === '/' || !/^(\/[A-Za-z0-9._-]+)+$/.test(prefix)) throw bad('the prefix must be a path like /sequoia/snowflake');
  let caFile: string | undefined;
  let certFile: string | undefined;
  let keyFile: string | undefined;
  for (const [k, v] of new URLSearchParams(m[4] ?? '')) {
    if (v === '') throw bad(`${k} needs a file`);
    if (k === 'cacert') caFile = v;
    else if (k === 'cert') certFile = v;
    else if (k === 'key') keyFile = v;
    else throw bad(`unknown option ${k} (cacert, cert and key are known)`);
  }
  if ((certFile === undefined) !== (keyFile === undefined)) throw bad('cert and key go together');
  if (certFile !== undefined && caFile === undefined) throw bad('a client certificate needs TLS: give cacert too');
  return { hosts, prefix, caFile, certFile, keyFile, user, password };
}
