/**
 * Drift between deploy/ and the code: every environment variable, flag,
 * port, path and probe named anywhere in deploy/ (and docs/deploy.md) exists
 * in the configuration field table (FIELDS) and the route table, with the
 * same defaults; every configuration a deploy file gives passes the real
 * config schema; every stop timeout is above the drain time; the defaults
 * docs/deploy.md gives next to a variable are the field table's, and the
 * secret it tells you to create holds every key the manifests read; and the
 * PrometheusRule holds exactly the rules of ops/prometheus/sequoia-alerts.yml.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { MemoryHighWaterMarkStore } from '../../src/adapters/memory/memory-high-water-mark-store.js';
import { k8sOrdinal } from '../../src/adapters/k8s/k8s-ordinal.js';
import { FIELDS, type FieldName, checkAdminExposure, resolveConfig } from '../../src/app/config.js';
import { isLoopbackHost } from '../../src/server/listen-check.js';
import { PRESETS } from '../../src/core/snowflake/layout.js';
import { buildApp } from '../../src/server/build-app.js';
import { IdService } from '../../src/service/id-service.js';
import { ControlledStore } from '../helpers/fakes.js';
import {
  deployFiles,
  durationSeconds,
  parseContainerfile,
  parseEnvFile,
  parseUnit,
  read,
  root,
  runtimeImage,
  yamlDoc,
  yamlDocs,
} from './deploy-files.js';

type Obj = Record<string, unknown>;
const fields = Object.entries(FIELDS) as [FieldName, (typeof FIELDS)[FieldName]][];
const byEnv = new Map(fields.map(([name, f]) => [f.env as string, name]));
const byFlag = new Map(fields.map(([name, f]) => [f.flag as string, name]));
/** Outside the field table, but read by serve: the config file's own flag and variable. */
const EXTRA_FLAGS = new Set(['--config']);
const EXTRA_ENV = new Set(['SEQUOIA_CONFIG']);
/** The test suite's switch (test/helpers/services.ts), never read by a server: docs/deploy.md may name it, deploy/ not. */
const DOCS_ONLY_ENV = new Set(['SEQUOIA_REQUIRE_SERVICES']);
const defaultOf = (name: FieldName): string => {
  const d = FIELDS[name].default as unknown;
  return d === undefined ? '' : String(d);
};

/** The text of deploy/ and docs/deploy.md, where a name may appear. */
const texts = [...deployFiles(), 'docs/deploy.md'].map((file) => ({ file, text: read(file) }));

/** SEQUOIA_* names in a text. */
export function envNames(text: string): string[] {
  return [...new Set([...text.matchAll(/\bSEQUOIA_[A-Z0-9_]*[A-Z0-9]\b/g)].map((m) => m[0]))];
}

/** Flags given to `serve`: on any line running the CLI's serve command (by path or by name). */
export function serveFlags(text: string): string[] {
  const out = new Set<string>();
  const joined = text.replace(/\\\n/g, ' ');
  for (const line of joined.split('\n')) {
    const m = /(?:dist\/cli\/main\.js|dist\/pkg\/cli\.js|\bsequoia)"?,?\s*"?serve\b(.*)$/.exec(line);
    if (!m) continue;
    for (const f of m[1]!.matchAll(/(?:^|[\s"'[,])(--[a-z][a-z0-9-]*)/g)) out.add(f[1]!);
  }
  return [...out];
}

/** A secret's stand-in, valid for its field, so a manifest's configuration can go through the schema. */
const SECRET_STANDIN: Record<string, string> = {
  SEQUOIA_STORE: 'postgres://sequoia:secret@db.internal:5432/sequoia',
  SEQUOIA_ADMIN_TOKEN: 'admin-token-from-secret',
  SEQUOIA_METRICS_TOKEN: 'metrics-token-from-secret-0123',
};
/** The same stand-ins as the files a `*_FILE` variable names (a mounted secret). */
const secretFiles = mkdtempSync(join(tmpdir(), 'sequoia-drift-secrets-'));
afterAll(() => rmSync(secretFiles, { recursive: true, force: true }));
function standinFile(env: string): string {
  const value = SECRET_STANDIN[env.replace(/_FILE$/, '')];
  if (value === undefined) throw new Error(`${env} names a secret file: add a stand-in value to the test`);
  const path = join(secretFiles, env);
  writeFileSync(path, `${value}\n`);
  return path;
}

/** The environment a Kubernetes container sees (secret values by stand-in), over the image's. */
function containerEnv(c: Obj, image: Record<string, string>): Record<string, string> {
  const env = { ...image };
  for (const e of (c.env as Obj[] | undefined) ?? []) {
    const name = e.name as string;
    if (typeof e.value === 'string') env[name] = e.value;
    else {
      const standin = SECRET_STANDIN[name];
      if (standin === undefined) throw new Error(`${name} comes from a secret: add a stand-in value to the test`);
      env[name] = standin;
    }
  }
  return env;
}

/** The variables that carry the admin token: the token, or the file it is read from. */
const ADMIN_TOKEN_VARS = [FIELDS.adminToken.env, FIELDS.adminTokenFile.env] as string[];

/**
 * Where a Kubernetes container takes its admin token from: a Secret
 * (`valueFrom.secretKeyRef`), or undefined (unset, or a literal `value`).
 */
export function k8sAdminTokenSecret(c: Obj): string | undefined {
  for (const e of (c.env as Obj[] | undefined) ?? []) {
    const ref = (e.valueFrom as Obj | undefined)?.secretKeyRef as { name?: string; key?: string } | undefined;
    if (ADMIN_TOKEN_VARS.includes(e.name as string) && ref?.name && ref.key) return `Secret ${ref.name}, key ${ref.key}`;
  }
  return undefined;
}

/**
 * Where a compose service takes its admin token from: a file under
 * /run/secrets/ that is one of the service's secrets, defined at the top
 * level; else undefined (a literal token in the file, or none).
 */
export function composeAdminTokenSecret(service: Obj, topLevelSecrets: Obj | undefined): string | undefined {
  const env = (service.environment as Record<string, string> | undefined) ?? {};
  if (env[FIELDS.adminToken.env] !== undefined) return undefined; // a literal token in the compose file
  const m = /^\/run\/secrets\/([A-Za-z0-9_.-]+)$/.exec(env[FIELDS.adminTokenFile.env] ?? '');
  if (!m) return undefined;
  const mounted = ((service.secrets as (string | { source: string })[] | undefined) ?? []).map((x) =>
    typeof x === 'string' ? x : x.source,
  );
  return mounted.includes(m[1]!) && topLevelSecrets?.[m[1]!] !== undefined ? `compose secret ${m[1]}` : undefined;
}

/** Where the systemd unit takes its admin token from: its EnvironmentFile (root-only), when that file sets it. */
export function systemdAdminTokenSecret(service: Map<string, string[]>, file: { active: Map<string, string> }): string | undefined {
  const envFiles = service.get('EnvironmentFile') ?? [];
  if (envFiles.length !== 1 || !envFiles[0]!.startsWith('/etc/')) return undefined;
  if (service.has('Environment') && (service.get('Environment') ?? []).some((e) => ADMIN_TOKEN_VARS.some((v) => e.includes(v))))
    return undefined; // a token in the unit itself, which any user may read
  return ADMIN_TOKEN_VARS.some((v) => file.active.has(v)) ? `EnvironmentFile ${envFiles[0]}` : undefined;
}

/** A compose service's environment, a `/run/secrets/…` file by a stand-in file. */
function composeEnv(s: Obj): Record<string, string> {
  const env = { ...(s.environment as Record<string, string>) };
  for (const [k, v] of Object.entries(env)) if (k.endsWith('_FILE') && v.startsWith('/run/secrets/')) env[k] = standinFile(k);
  return env;
}

/** The systemd environment file's settings, a secret left for the operator to fill in (`SEQUOIA_ADMIN_TOKEN=`) by its stand-in. */
function systemdEnv(file: { active: Map<string, string> }): Record<string, string> {
  const env = Object.fromEntries(file.active);
  for (const [k, v] of Object.entries(env)) if (v === '' && SECRET_STANDIN[k] !== undefined) env[k] = SECRET_STANDIN[k];
  return env;
}

const image = runtimeImage(parseContainerfile(read('deploy/Containerfile')));
const k8sObjects = (yamlDoc('deploy/kubernetes/kustomization.yaml').resources as string[]).flatMap((f) =>
  yamlDocs(`deploy/kubernetes/${f}`),
);
const workloads = k8sObjects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
const compose = yamlDoc('deploy/compose.yaml');
const composeServers = Object.entries(compose.services as Record<string, Obj>).filter(([n]) => /^sequoia-[0-9]+$/.test(n));
const unit = parseUnit(read('deploy/systemd/sequoia.service'));
const unitService = unit.get('Service')!;
const envFile = parseEnvFile(read('deploy/systemd/sequoia.env'));
const prometheusConfig = yamlDoc('deploy/prometheus/prometheus.yml');

/**
 * Each place that runs a server, with the environment it runs with (secrets
 * by stand-ins) and where it takes its admin token from. The image's own
 * environment is one too: what `podman run IMAGE` starts with nothing added.
 */
const runs: { where: string; env: Record<string, string>; adminTokenSecret: string | undefined }[] = [
  { where: 'Containerfile', env: image.env, adminTokenSecret: undefined },
  ...workloads.map((w) => {
    const c = ((w.spec as Obj).template as { spec: { containers: Obj[] } }).spec.containers[0]!;
    return {
      where: `${String(w.kind)} ${String((w.metadata as Obj).name)}`,
      env: containerEnv(c, image.env),
      adminTokenSecret: k8sAdminTokenSecret(c),
    };
  }),
  ...composeServers.map(([name, s]) => ({
    where: `compose ${name}`,
    env: { ...image.env, ...composeEnv(s) },
    adminTokenSecret: composeAdminTokenSecret(s, compose.secrets as Obj | undefined),
  })),
  { where: 'systemd', env: systemdEnv(envFile), adminTokenSecret: systemdAdminTokenSecret(unitService, envFile) },
];
/** A setting as the server resolves it: the given environment, else the field's default. */
const effective = (env: Record<string, string>, name: FieldName): string => env[FIELDS[name].env] ?? defaultOf(name);

let app: FastifyInstance;
beforeAll(async () => {
  const service = new IdService({ store: new ControlledStore(), marks: new MemoryHighWaterMarkStore(), refreshIntervalMs: 0 });
  await service.start();
  app = await buildApp({ service });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
});
const isGetRoute = (path: string): boolean => app.hasRoute({ method: 'GET', url: path });

describe('names in deploy/ exist in the field table', () => {
  it('finds the names it looks for (the extractors work)', () => {
    expect(envNames('a SEQUOIA_PORT=1 "SEQUOIA_NOPE_X" SEQUOIA_')).toEqual(['SEQUOIA_PORT', 'SEQUOIA_NOPE_X']);
    expect(serveFlags('ExecStart=node /opt/x/dist/cli/main.js serve --port 1 \\\n  --no-such-flag=2')).toEqual([
      '--port',
      '--no-such-flag',
    ]);
    expect(serveFlags('ENTRYPOINT ["node", "dist/cli/main.js", "serve", "--host"]')).toEqual(['--host']);
    expect(serveFlags('$ sequoia serve --store postgres://x --config /etc/s.json')).toEqual(['--store', '--config']);
    expect(serveFlags('podman run --read-only image')).toEqual([]);
  });

  it.each(texts.map((t) => [t.file, t.text]))('every SEQUOIA_* variable named in %s is a configuration field', (file, text) => {
    const unknown = envNames(text).filter(
      (n) => !byEnv.has(n) && !EXTRA_ENV.has(n) && !(file === 'docs/deploy.md' && DOCS_ONLY_ENV.has(n)),
    );
    expect(unknown).toEqual([]);
  });

  it.each(texts.map((t) => [t.file, t.text]))('every serve flag named in %s is a configuration field', (_file, text) => {
    const unknown = serveFlags(text).filter((f) => !byFlag.has(f) && !EXTRA_FLAGS.has(f));
    expect(unknown).toEqual([]);
  });

  it('the systemd environment file lists every field once, its commented defaults equal to the field table', () => {
    for (const [name, f] of fields) {
      const listed = envFile.active.has(f.env) || envFile.defaults.has(f.env);
      expect(listed, `${f.env} in sequoia.env`).toBe(true);
      expect(envFile.active.has(f.env) && envFile.defaults.has(f.env), `${f.env} both set and commented`).toBe(false);
      if (envFile.defaults.has(f.env)) expect(envFile.defaults.get(f.env), f.env).toBe(defaultOf(name));
    }
    for (const k of [...envFile.active.keys(), ...envFile.defaults.keys()]) expect(byEnv.has(k), k).toBe(true);
  });

  it.each(runs.map((r) => [r.where, r.env]))('the configuration of %s passes the config schema', (_where, env) => {
    const sequoiaOnly = Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('SEQUOIA_')));
    expect(() => resolveConfig({}, sequoiaOnly, undefined)).not.toThrow();
  });

  const shipped = runs.filter((r) => r.where !== 'Containerfile');
  it.each(shipped.map((r) => [r.where, r]))(
    '%s listens beyond loopback only with an admin token from a secret, and so starts (no opt-out)',
    (_where, r) => {
      if (isLoopbackHost(effective(r.env, 'host'))) return; // on loopback no token is required
      expect(r.adminTokenSecret, `${r.where} listens on ${effective(r.env, 'host')}: take the admin token from a secret`).toBeDefined();
      expect(effective(r.env, 'allowOpenAdmin'), r.where).toBe('false');
      const config = resolveConfig({}, r.env, undefined);
      expect(config.adminToken).toBe(SECRET_STANDIN.SEQUOIA_ADMIN_TOKEN);
      expect(checkAdminExposure(config)).toBeUndefined();
    },
  );

  it('the image carries no token, and with only its own environment refuses to start (it listens on 0.0.0.0)', () => {
    expect(isLoopbackHost(effective(image.env, 'host'))).toBe(false);
    for (const v of [...ADMIN_TOKEN_VARS, FIELDS.metricsToken.env, FIELDS.allowOpenAdmin.env]) expect(image.env[v], v).toBeUndefined();
    expect(() => checkAdminExposure(resolveConfig({}, image.env, undefined))).toThrow(/--admin-token.*--allow-open-admin/s);
  });

  it('the secret check can fail: a token written in the manifest, or none, is not a secret', () => {
    const dep = structuredClone(workloads.find((w) => w.kind === 'Deployment')!);
    const c = ((dep.spec as Obj).template as { spec: { containers: Obj[] } }).spec.containers[0]!;
    expect(k8sAdminTokenSecret(c)).toBe('Secret sequoia, key admin-token');
    const env = c.env as Obj[];
    env.splice(
      env.findIndex((e) => e.name === FIELDS.adminToken.env),
      1,
      { name: FIELDS.adminToken.env, value: 'literal-token' },
    );
    expect(k8sAdminTokenSecret(c)).toBeUndefined();
    c.env = env.filter((e) => e.name !== FIELDS.adminToken.env);
    expect(k8sAdminTokenSecret(c)).toBeUndefined();

    const [, server] = composeServers[0]!;
    expect(composeAdminTokenSecret(server, compose.secrets as Obj)).toBe('compose secret sequoia-admin-token');
    expect(composeAdminTokenSecret({ ...server, secrets: [] }, compose.secrets as Obj)).toBeUndefined();
    expect(composeAdminTokenSecret(server, {})).toBeUndefined();
    const literal = { ...server, environment: { ...(server.environment as Obj), SEQUOIA_ADMIN_TOKEN: 'literal-token' } };
    expect(composeAdminTokenSecret(literal, compose.secrets as Obj)).toBeUndefined();

    expect(systemdAdminTokenSecret(unitService, envFile)).toBe('EnvironmentFile /etc/sequoia/sequoia.env');
    expect(systemdAdminTokenSecret(unitService, { active: new Map([['SEQUOIA_HOST', '0.0.0.0']]) })).toBeUndefined();
    const inUnit = new Map([...unitService, ['Environment', ['SEQUOIA_ADMIN_TOKEN=in-the-unit']]]);
    expect(systemdAdminTokenSecret(inUnit, envFile)).toBeUndefined();
  });

  it('the k8s-ordinal StatefulSet pods get worker ids inside the layout, apart from the ids the segment pods lease', () => {
    const sts = workloads.find((w) => w.kind === 'StatefulSet')!;
    const dep = workloads.find((w) => w.kind === 'Deployment')!;
    const name = (sts.metadata as Obj).name as string;
    const env = runs.find((r) => r.where === `StatefulSet ${name}`)!.env;
    const m = /^k8s-ordinal(?::([0-9]+))?$/.exec(effective(env, 'workerIdProvider'));
    expect(m).not.toBeNull();
    const offset = Number(m![1] ?? 0);
    const replicas = (sts.spec as Obj).replicas as number;
    const layout = PRESETS.get(effective(env, 'snowflakeLayout'))!;
    expect(layout).toBeDefined();
    expect(k8sOrdinal(`${name}-0`, offset)).toBe(offset);
    expect(k8sOrdinal(`${name}-${replicas - 1}`, offset)).toBeLessThan(2 ** layout.workerBits);
    // Every server leases a worker id for its default layout at start: the segment pods' must be
    // another id space, or a segment pod could take the id a restarting snowflake pod just released.
    const depEnv = runs.find((r) => r.where === `Deployment ${String((dep.metadata as Obj).name)}`)!.env;
    const depLayout = PRESETS.get(effective(depEnv, 'snowflakeLayout'))!;
    expect(depLayout).toBeDefined();
    expect(depLayout.spaceKey).not.toBe(layout.spaceKey);
    // Asked for the StatefulSet's layout, a segment pod leases the lowest free id: below the offset.
    expect((dep.spec as Obj).replicas as number).toBeLessThan(offset);
  });
});

describe('what docs/deploy.md says of a setting or a secret matches deploy/ and the field table', () => {
  const page = read('docs/deploy.md').replace(/\s+/g, ' ');

  /** "`SEQUOIA_X` (10 s by default)", "`SEQUOIA_X` (1,000,000 by default)", "`SEQUOIA_X` (10 s)": the value in the field's own unit. */
  function statedDefaults(text: string): { env: string; stated: string; value: number }[] {
    const unit: Record<string, number> = { ms: 1, s: 1000, min: 60_000 };
    return [...text.matchAll(/`(SEQUOIA_[A-Z0-9_]+)` \(([0-9][0-9,.]*)(?: (ms|s|min))?(?: by default)?\)/g)].map((m) => {
      const n = Number(m[2]!.replace(/,/g, ''));
      return { env: m[1]!, stated: m[0], value: m[3] === undefined ? n : (n * unit[m[3]]!) / (m[1]!.endsWith('_MS') ? 1 : 1000) };
    });
  }

  it('finds the values it looks for (the extractor works)', () => {
    expect(
      statedDefaults('up to `SEQUOIA_MAX_STEP` (1,000,000 by default), `SEQUOIA_WORKER_LEASE_TTL_MS` (10 s by default), `SEQUOIA_X`'),
    ).toEqual([
      { env: 'SEQUOIA_MAX_STEP', stated: '`SEQUOIA_MAX_STEP` (1,000,000 by default)', value: 1_000_000 },
      { env: 'SEQUOIA_WORKER_LEASE_TTL_MS', stated: '`SEQUOIA_WORKER_LEASE_TTL_MS` (10 s by default)', value: 10_000 },
    ]);
  });

  it("every default the page gives next to a variable is the field table's default", () => {
    const stated = statedDefaults(page);
    expect(stated.map((s) => s.env)).toEqual(
      expect.arrayContaining(['SEQUOIA_SHUTDOWN_TIMEOUT_MS', 'SEQUOIA_MAX_STEP', 'SEQUOIA_WORKER_LEASE_TTL_MS']),
    );
    for (const s of stated) {
      const name = byEnv.get(s.env);
      expect(name, s.stated).toBeDefined();
      expect(String(s.value), s.stated).toBe(defaultOf(name!));
    }
  });

  it('the secret the page tells you to create holds every key the manifests read from it', () => {
    const m = /kubectl -n (\S+) create secret generic (\S+)(.*?)```/.exec(page);
    expect(m, 'the kubectl create secret command').not.toBeNull();
    const [, namespace, secret, literals] = m!;
    expect(namespace).toBe(yamlDoc('deploy/kubernetes/kustomization.yaml').namespace);
    const created = [...literals!.matchAll(/--from-literal=([a-z0-9-]+)=/g)].map((x) => x[1]!);
    const read: { name: string; key: string }[] = [];
    const walk = (node: unknown): void => {
      if (node === null || typeof node !== 'object') return;
      const o = node as Obj;
      if (o.secretKeyRef) read.push(o.secretKeyRef as { name: string; key: string });
      if (o.credentials && typeof (o.credentials as Obj).key === 'string') read.push(o.credentials as { name: string; key: string });
      for (const v of Object.values(o)) walk(v);
    };
    k8sObjects.forEach(walk);
    expect(read.length).toBeGreaterThanOrEqual(7); // three per workload, one for the ServiceMonitor
    for (const r of read) {
      expect(r.name, JSON.stringify(r)).toBe(secret);
      expect(created, JSON.stringify(r)).toContain(r.key);
    }
  });
});

describe('ports, paths and probes in deploy/ match the server', () => {
  it('the route table has the probes and the paths deploy/ names, and only those', () => {
    expect(isGetRoute('/no-such-route')).toBe(false);
    const paths = new Set<string>();
    for (const w of workloads) {
      const c = ((w.spec as Obj).template as { spec: { containers: Obj[] } }).spec.containers[0]!;
      for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
        const p = c[probe] as { httpGet?: { path: string } } | undefined;
        if (p?.httpGet) paths.add(p.httpGet.path);
      }
    }
    for (const sm of k8sObjects.filter((o) => o.kind === 'ServiceMonitor')) {
      for (const ep of (sm.spec as { endpoints: Obj[] }).endpoints) paths.add((ep.path as string | undefined) ?? '/metrics');
    }
    for (const job of prometheusConfig.scrape_configs as Obj[]) paths.add((job.metrics_path as string | undefined) ?? '/metrics');
    for (const m of image.healthcheck!.command.join(' ').matchAll(/'(\/[a-z/]+)'/g)) paths.add(m[1]!);
    // Any http://host:port/path on a Sequoia port (the image's, or one compose publishes) in deploy/ and docs/deploy.md.
    const ports = new Set([
      effective(image.env, 'port'),
      ...composeServers.flatMap(([, s]) => (s.ports as string[]).map((p) => p.split(':').at(-2)!)),
    ]);
    expect(ports.size).toBe(4);
    for (const { text } of texts) {
      for (const m of text.matchAll(/https?:\/\/[a-z0-9.-]+:([0-9]+)(\/[a-z0-9_/-]*[a-z0-9])/gi)) if (ports.has(m[1]!)) paths.add(m[2]!);
    }
    expect([...paths].sort()).toEqual(expect.arrayContaining(['/healthz', '/metrics', '/readyz']));
    const unknown = [...paths].filter((p) => !isGetRoute(p) && !/^\/(api|v1)\//.test(p));
    expect(unknown).toEqual([]);
    for (const p of [...paths].filter((x) => /^\/(api|v1)\//.test(x))) {
      // An ID route with its tag: the route table matches it with its parameter.
      expect(isGetRoute(p.replace(/\/[^/]+$/, '/:tag')) || isGetRoute(p), p).toBe(true);
    }
  });

  it('the port each server listens on is the port exposed, probed, served and scraped', () => {
    expect(defaultOf('port')).toBe('8080');
    const imagePort = Number(effective(image.env, 'port'));
    expect(image.expose).toEqual([imagePort]);
    // The health check's fallback port is the field's default.
    expect(image.healthcheck!.command.join(' ')).toContain(`SEQUOIA_PORT||${defaultOf('port')}`);
    for (const w of workloads) {
      const c = ((w.spec as Obj).template as { spec: { containers: Obj[] } }).spec.containers[0]!;
      const port = Number(effective(containerEnv(c, image.env), 'port'));
      const named = new Map((c.ports as Obj[]).map((p) => [p.name as string, p.containerPort as number]));
      expect(named.get('http')).toBe(port);
      for (const probe of ['readinessProbe', 'livenessProbe']) {
        const target = ((c[probe] as Obj).httpGet as Obj).port;
        expect(typeof target === 'string' ? named.get(target) : target).toBe(port);
      }
    }
    const targets = (prometheusConfig.scrape_configs as { static_configs: { targets: string[] }[] }[]).flatMap((j) =>
      j.static_configs.flatMap((s) => s.targets),
    );
    for (const [name, s] of composeServers) {
      const port = Number(effective({ ...image.env, ...(s.environment as Record<string, string>) }, 'port'));
      expect(
        (s.ports as string[]).every((p) => p.endsWith(`:${port}`)),
        name,
      ).toBe(true);
      expect(targets).toContain(`${name}:${port}`);
    }
  });

  it('the state dir is the volume, and a SQLite store lives in it', () => {
    expect(image.volumes).toEqual([effective(image.env, 'stateDir')]);
    for (const r of runs) {
      const stateDir = effective(r.env, 'stateDir');
      expect(stateDir, r.where).toMatch(/^\//); // absolute: the working directory is read-only
      const store = effective(r.env, 'store');
      if (store.startsWith('sqlite:')) expect(store, r.where).toBe(`sqlite:${stateDir}/sequoia.db`);
    }
    for (const w of workloads) {
      const c = ((w.spec as Obj).template as { spec: { containers: Obj[] } }).spec.containers[0]!;
      const mount = (c.volumeMounts as Obj[]).find((m) => m.name === 'state')!;
      expect(mount.mountPath).toBe(effective(containerEnv(c, image.env), 'stateDir'));
    }
    for (const [name, s] of composeServers) {
      const env = { ...image.env, ...(s.environment as Record<string, string>) };
      expect(
        (s.volumes as string[]).map((v) => v.split(':')[1]),
        name,
      ).toEqual([effective(env, 'stateDir')]);
    }
    // systemd: StateDirectory=NAME is /var/lib/NAME, owned by the service's user.
    expect(unitService.get('StateDirectory')).toEqual(['sequoia']);
    expect(envFile.active.get('SEQUOIA_STATE_DIR')).toBe('/var/lib/sequoia');
  });

  it('every stop timeout is above the drain time (SEQUOIA_DRAIN_DELAY_MS + SEQUOIA_SHUTDOWN_TIMEOUT_MS)', () => {
    expect(defaultOf('shutdownTimeoutMs')).toBe('10000');
    expect(defaultOf('drainDelayMs')).toBe('0');
    const drain = (env: Record<string, string>): number =>
      (Number(effective(env, 'drainDelayMs')) + Number(effective(env, 'shutdownTimeoutMs'))) / 1000;
    const margin = 5; // the give-back to the store and closing it, after the drain
    for (const w of workloads) {
      const pod = ((w.spec as Obj).template as { spec: Obj }).spec;
      const c = (pod.containers as Obj[])[0]!;
      const preStop = (((c.lifecycle as Obj | undefined)?.preStop as Obj | undefined)?.exec as { command: string[] } | undefined)?.command;
      const preStopSeconds = preStop && preStop[0] === 'sleep' ? Number(preStop[1]) : 0;
      expect(pod.terminationGracePeriodSeconds as number).toBeGreaterThanOrEqual(
        preStopSeconds + drain(containerEnv(c, image.env)) + margin,
      );
    }
    for (const [name, s] of composeServers) {
      expect(s.stop_signal, name).toBe('SIGTERM');
      const env = { ...image.env, ...(s.environment as Record<string, string>) };
      expect(durationSeconds(s.stop_grace_period as string), name).toBeGreaterThanOrEqual(drain(env) + margin);
    }
    expect(unitService.get('KillSignal')).toEqual(['SIGTERM']);
    expect(Number(unitService.get('TimeoutStopSec')![0])).toBeGreaterThanOrEqual(drain(Object.fromEntries(envFile.active)) + margin);
    // The run commands shown for the image (Containerfile, docs/deploy.md) pass --stop-timeout above the drain.
    for (const { file, text } of texts) {
      for (const m of text.matchAll(/--stop-timeout[ =]([0-9]+)/g))
        expect(Number(m[1]), file).toBeGreaterThanOrEqual(drain(image.env) + margin);
    }
    expect(texts.some((t) => /--stop-timeout/.test(t.text))).toBe(true);
  });
});

describe('alert rules: one source, ops/prometheus/sequoia-alerts.yml', () => {
  const source = parse(read('ops/prometheus/sequoia-alerts.yml')) as { groups: { name: string; rules: Obj[] }[] };
  const rule = k8sObjects.find((o) => o.kind === 'PrometheusRule') as { spec: { groups: unknown[] } } | undefined;

  it('the PrometheusRule holds exactly the groups and rules of the shipped file (`npm run deploy:rules` writes it)', () => {
    expect(rule).toBeDefined();
    expect(source.groups.flatMap((g) => g.rules).length).toBeGreaterThan(3);
    expect(rule!.spec.groups).toEqual(source.groups);
  });

  it('a changed, missing or extra rule is a difference', () => {
    const changed = structuredClone(source.groups);
    changed[0]!.rules[0]!.expr = 'vector(1)';
    expect(rule!.spec.groups).not.toEqual(changed);
    const fewer = structuredClone(source.groups);
    fewer[0]!.rules.pop();
    expect(rule!.spec.groups).not.toEqual(fewer);
  });

  it('compose loads the same file into Prometheus, and so does the config checked from the checkout', () => {
    const prom = (compose.services as Record<string, { volumes: string[] }>).prometheus!;
    const mounts = prom.volumes.map((v) => v.split(':'));
    const mount = mounts.find(([src]) => src === '../ops/prometheus/sequoia-alerts.yml');
    const config = mounts.find(([src]) => src === './prometheus/prometheus.yml');
    expect(mount).toBeDefined();
    expect(config).toBeDefined();
    // Relative to the config file, as Prometheus resolves it: in compose, where the rules are mounted;
    // in the checkout, a link to the same file (so `promtool check config` works on it as it is).
    const files = prometheusConfig.rule_files as string[];
    expect(files.map((f) => posix.resolve(posix.dirname(config![1]!), f))).toEqual([mount![1]]);
    expect(files.map((f) => realpathSync(join(root, 'deploy/prometheus', f)))).toEqual([
      realpathSync(join(root, 'ops/prometheus/sequoia-alerts.yml')),
    ]);
  });
});
