/**
 * deploy/: the Kubernetes manifests validate against the API schemas offline
 * (kubernetes-models, prometheus-operator models), hold what a production
 * pod needs (probes, resources, non-root, read-only root, graceful
 * termination, PDB), and the Containerfile and compose file are what
 * docs/deploy.md promises. Checked statically: containers cannot run on the
 * CI machines (docs/deploy.md).
 */
import { existsSync } from 'node:fs';
import { join, posix } from 'node:path';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { Namespace, Service } from 'kubernetes-models/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { describe, expect, it } from 'vitest';
import { deployFiles, parseContainerfile, read, root, runtimeImage, yamlDoc, yamlDocs } from './deploy-files.js';

type Obj = Record<string, unknown>;
type Validating = { validate(): void };

/** apiVersion/kind → the model that validates it. Anything else in deploy/kubernetes is an error. */
const MODELS: Record<string, (o: Obj) => Validating> = {
  'apps/v1/Deployment': (o) => new Deployment(o as never),
  'apps/v1/StatefulSet': (o) => new StatefulSet(o as never),
  'v1/Service': (o) => new Service(o as never),
  'v1/Namespace': (o) => new Namespace(o as never),
  'policy/v1/PodDisruptionBudget': (o) => new PodDisruptionBudget(o as never),
  'monitoring.coreos.com/v1/ServiceMonitor': (o) => new ServiceMonitor(o as never),
  'monitoring.coreos.com/v1/PrometheusRule': (o) => new PrometheusRule(o as never),
};

const kustomization = yamlDoc('deploy/kubernetes/kustomization.yaml');
const resourceFiles = (kustomization.resources as string[]).map((f) => `deploy/kubernetes/${f}`);
/** Every object the kustomization applies, with the file it came from. */
const objects: { file: string; obj: Obj }[] = resourceFiles.flatMap((file) => yamlDocs(file).map((obj) => ({ file, obj })));
const byKind = (kind: string): Obj[] => objects.filter((o) => o.obj.kind === kind).map((o) => o.obj);
const one = (kind: string, name: string): Obj => {
  const found = byKind(kind).filter((o) => (o.metadata as Obj).name === name);
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${found.length}`);
  return found[0]!;
};

/** Walks a path of keys, failing with the path when something is missing. */
function at<T = unknown>(o: unknown, path: string): T {
  let cur: unknown = o;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || !(key in cur)) throw new Error(`missing ${path} (at ${key})`);
    cur = (cur as Obj)[key];
  }
  return cur as T;
}

export function validateManifest(obj: Obj): void {
  const key = `${String(obj.apiVersion)}/${String(obj.kind)}`;
  const model = MODELS[key];
  if (!model) throw new Error(`no schema for ${key}: add its model to the test`);
  model(obj).validate();
}

/**
 * The models' validate() checks types and required fields but lets unknown
 * fields through (a misspelt `readinesProbe` would pass, and kubectl would
 * refuse it). A field the schema knows is type-checked: so each field in turn
 * gets a value no schema type accepts (a bigint); a field whose bad value
 * still validates is unknown to the schema. Answers those paths.
 */
export function unknownFields(obj: Obj): string[] {
  const out: string[] = [];
  const walk = (node: unknown, path: (string | number)[]): void => {
    if (node === null || typeof node !== 'object') return;
    const entries: [string | number, unknown][] = Array.isArray(node) ? node.map((v, i) => [i, v]) : Object.entries(node as Obj);
    for (const [key, value] of entries) {
      const here = [...path, key];
      if (typeof key === 'string' && !(path.length === 0 && (key === 'apiVersion' || key === 'kind'))) {
        const probe = structuredClone(obj);
        let parent: unknown = probe;
        for (const k of path) parent = (parent as Record<string | number, unknown>)[k];
        (parent as Obj)[key] = 10n;
        let accepted = true;
        try {
          validateManifest(probe);
        } catch {
          accepted = false;
        }
        if (accepted) {
          out.push(here.join('.'));
          continue; // nothing below an unknown field is known
        }
      }
      walk(value, here);
    }
  };
  walk(obj, []);
  return out;
}

describe('Kubernetes manifests (deploy/kubernetes)', () => {
  it('the kustomization lists every manifest of the folder, and only files that exist', () => {
    const onDisk = deployFiles()
      .filter((f) => f.startsWith('deploy/kubernetes/') && f.endsWith('.yaml') && !f.endsWith('/kustomization.yaml'))
      .sort();
    expect([...resourceFiles].sort()).toEqual(onDisk);
    for (const f of resourceFiles) expect(existsSync(join(root, f))).toBe(true);
  });

  it.each(objects.map((o) => [`${o.file}: ${String(o.obj.kind)} ${String((o.obj.metadata as Obj | undefined)?.name)}`, o.obj]))(
    'validates against the API schema offline: %s',
    (_name, obj) => {
      expect(() => validateManifest(obj as Obj)).not.toThrow();
    },
  );

  it.each(objects.map((o) => [`${o.file}: ${String(o.obj.kind)}`, o.obj]))('has no field the schema does not know: %s', (_name, obj) => {
    expect(unknownFields(obj as Obj)).toEqual([]);
  });

  it('the validation is real: a wrong type, a missing field, a misspelt field and an unknown kind are refused', () => {
    const typo = structuredClone(one('StatefulSet', 'sequoia-snowflake'));
    at<Obj>(typo, 'spec.template.spec.containers.0').readinesProbe = { httpGet: { path: '/readyz', port: 'http' } };
    at<Obj>(typo, 'spec.template.spec').terminationGracePeriodSecond = 30;
    expect(unknownFields(typo)).toEqual([
      'spec.template.spec.containers.0.readinesProbe',
      'spec.template.spec.terminationGracePeriodSecond',
    ]);
    const dep = structuredClone(one('Deployment', 'sequoia'));
    (dep.spec as Obj).replicas = 'three';
    expect(() => validateManifest(dep)).toThrow();
    const noSelector = structuredClone(one('Deployment', 'sequoia'));
    delete (noSelector.spec as Obj).selector;
    expect(() => validateManifest(noSelector)).toThrow();
    const badProbe = structuredClone(one('Deployment', 'sequoia'));
    at<Obj>(badProbe, 'spec.template.spec.containers.0.readinessProbe').periodSeconds = '5s';
    expect(() => validateManifest(badProbe)).toThrow();
    const rule = structuredClone(one('PrometheusRule', 'sequoia'));
    at<Obj>(rule, 'spec.groups.0').rules = 'none';
    expect(() => validateManifest(rule)).toThrow();
    expect(() => validateManifest({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } })).toThrow(/no schema/);
  });

  const workloads = [one('Deployment', 'sequoia'), one('StatefulSet', 'sequoia-snowflake')];
  describe.each(workloads.map((w) => [`${String(w.kind)} ${String((w.metadata as Obj).name)}`, w]))('%s', (_name, w) => {
    const pod = at<Obj>(w, 'spec.template.spec');
    const containers = at<Obj[]>(pod, 'containers');
    const c = containers[0]!;
    it('runs one container, non-root, read-only root, no privilege escalation, all capabilities dropped', () => {
      expect(containers).toHaveLength(1);
      expect(at(pod, 'securityContext.runAsNonRoot')).toBe(true);
      expect(at<number>(pod, 'securityContext.runAsUser')).toBeGreaterThan(0);
      expect(at(pod, 'securityContext.seccompProfile.type')).toBe('RuntimeDefault');
      expect(at(c, 'securityContext.readOnlyRootFilesystem')).toBe(true);
      expect(at(c, 'securityContext.allowPrivilegeEscalation')).toBe(false);
      expect(at(c, 'securityContext.capabilities.drop')).toEqual(['ALL']);
      expect(pod.automountServiceAccountToken).toBe(false);
    });

    it('has readiness on /readyz and liveness on /healthz, resources, and the image of the kustomization', () => {
      expect(at(c, 'readinessProbe.httpGet.path')).toBe('/readyz');
      expect(at(c, 'livenessProbe.httpGet.path')).toBe('/healthz');
      expect(at(c, 'resources.requests.cpu')).toBeTruthy();
      expect(at(c, 'resources.requests.memory')).toBeTruthy();
      expect(at(c, 'resources.limits.memory')).toBeTruthy();
      expect((kustomization.images as Obj[]).map((i) => i.name)).toContain(c.image);
    });

    it('keeps the state dir on a volume', () => {
      const mounts = at<Obj[]>(c, 'volumeMounts');
      expect(mounts.map((m) => m.name)).toContain('state');
      const claims = ((w.spec as Obj).volumeClaimTemplates as Obj[] | undefined) ?? [];
      const volumes = (pod.volumes as Obj[] | undefined) ?? [];
      const declared = [...claims.map((v) => at<string>(v, 'metadata.name')), ...volumes.map((v) => v.name)];
      expect(declared).toContain('state');
    });

    it('has a PodDisruptionBudget and a Service selecting exactly its pods', () => {
      const labels = at<Obj>(w, 'spec.template.metadata.labels');
      const selects = (sel: Obj): boolean => Object.entries(sel).every(([k, v]) => labels[k] === v);
      expect(selects(at<Obj>(w, 'spec.selector.matchLabels'))).toBe(true);
      const pdbs = byKind('PodDisruptionBudget').filter((p) => selects(at<Obj>(p, 'spec.selector.matchLabels')));
      expect(pdbs).toHaveLength(1);
      const other = workloads.find((x) => x !== w)!;
      const otherLabels = at<Obj>(other, 'spec.template.metadata.labels');
      const services = byKind('Service').filter((s) => selects(at<Obj>(s, 'spec.selector')));
      expect(services.length).toBeGreaterThan(0);
      for (const s of services) {
        // A Service of one workload never selects the other's pods.
        expect(Object.entries(at<Obj>(s, 'spec.selector')).every(([k, v]) => otherLabels[k] === v)).toBe(false);
        for (const p of at<Obj[]>(s, 'spec.ports')) {
          expect(at<Obj[]>(c, 'ports').map((cp) => cp.name)).toContain(p.targetPort);
        }
      }
    });
  });

  it('the snowflake StatefulSet uses k8s-ordinal behind a headless Service, one process per pod, state on a claim', () => {
    const sts = one('StatefulSet', 'sequoia-snowflake');
    const svc = one('Service', at<string>(sts, 'spec.serviceName'));
    expect(at(svc, 'spec.clusterIP')).toBe('None');
    const env = Object.fromEntries(at<Obj[]>(sts, 'spec.template.spec.containers.0.env').map((e) => [e.name, e.value]));
    expect(String(env.SEQUOIA_WORKER_ID_PROVIDER)).toMatch(/^k8s-ordinal(:[0-9]+)?$/);
    expect(env.SEQUOIA_WORKERS).toBe('1');
    expect(at<Obj[]>(sts, 'spec.volumeClaimTemplates').map((v) => at(v, 'metadata.name'))).toContain('state');
  });

  it('the ServiceMonitor scrapes both Services on their named port with the metrics token', () => {
    const sm = one('ServiceMonitor', 'sequoia');
    const sel = at<Obj>(sm, 'spec.selector.matchLabels');
    const scraped = byKind('Service').filter((s) => Object.entries(sel).every(([k, v]) => at<Obj>(s, 'metadata.labels')[k] === v));
    expect(scraped.map((s) => at(s, 'metadata.name')).sort()).toEqual(['sequoia', 'sequoia-snowflake']);
    const ep = at<Obj[]>(sm, 'spec.endpoints')[0]!;
    for (const s of scraped) expect(at<Obj[]>(s, 'spec.ports').map((p) => p.name)).toContain(ep.port);
    expect(at(ep, 'authorization.credentials.key')).toBe('metrics-token');
  });
});

describe('Containerfile (static: containers cannot run on these machines)', () => {
  const stages = parseContainerfile(read('deploy/Containerfile'));
  const image = runtimeImage(stages);

  it('is multi-stage on Node 24 slim', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const s of stages) expect(s.from).toMatch(/(^|\/)node:24(\.[0-9.]+)?-(bookworm-|trixie-)?slim$/);
  });

  it('runs as a numeric non-root user, with a volume, a HEALTHCHECK on /readyz, STOPSIGNAL SIGTERM and an exec-form ENTRYPOINT', () => {
    expect(image.user).toMatch(/^[1-9][0-9]*(:[1-9][0-9]*)?$/);
    expect(image.volumes).toHaveLength(1);
    expect(image.healthcheck).toBeDefined();
    expect(image.healthcheck!.command.join(' ')).toContain('/readyz');
    expect(image.stopSignal).toBe('SIGTERM');
    // The package's bin (entry-point.test.ts holds every start to it).
    const pkg = JSON.parse(read('package.json')) as { bin: { sequoia: string } };
    expect(image.entrypoint.slice(0, 3)).toEqual(['node', pkg.bin.sequoia, 'serve']);
  });

  it('the volume directory is created and owned by the image user', () => {
    const volume = image.volumes[0]!;
    const runs = stages
      .at(-1)!
      .instructions.filter((i) => i.op === 'RUN')
      .map((i) => i.args)
      .join(' ');
    const uid = image.user!.split(':')[0]!;
    expect(runs).toContain(`mkdir -p ${volume}`);
    expect(runs).toMatch(new RegExp(`chown ${uid}(:[0-9]+)? ${volume}`));
  });

  it('installs production dependencies only in the final image', () => {
    const build = stages[0]!.instructions
      .filter((i) => i.op === 'RUN')
      .map((i) => i.args)
      .join(' ');
    expect(build).toMatch(/npm ci\b/);
    expect(build).toMatch(/npm prune --omit=dev/);
    const last = stages.at(-1)!;
    expect(
      last.instructions
        .filter((i) => i.op === 'RUN')
        .map((i) => i.args)
        .join(' '),
    ).not.toMatch(/npm (ci|install)/);
  });

  it('every COPY source exists: in the build context, or in the stage it copies from', () => {
    const ignore = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(ignore[0]).toBe('*');
    const contextAllowed = ignore.filter((l) => l.startsWith('!'));
    const stageNames = new Set(stages.map((s) => s.name).filter(Boolean));
    for (const [index, stage] of stages.entries()) {
      for (const ins of stage.instructions.filter((i) => i.op === 'COPY')) {
        const words = ins.args.split(/\s+/);
        const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
        const paths = words.filter((w) => !w.startsWith('--'));
        const sources = paths.slice(0, -1);
        expect(sources.length).toBeGreaterThan(0);
        if (from === undefined) {
          for (const s of sources) {
            expect(existsSync(join(root, s)), `${s} (COPY, line ${ins.line})`).toBe(true);
            // .dockerignore leaves only what is listed with `!` in the build context.
            expect(contextAllowed, `${s} in .dockerignore`).toContain(`!${s.replace(/\/$/, '')}`);
          }
        } else {
          expect(stageNames.has(from), `stage ${from}`).toBe(true);
          expect(stages.findIndex((s) => s.name === from)).toBeLessThan(index);
          // What the build stage makes: package.json and node_modules (npm ci), dist/ (the build, see package.json).
          const made = ['/src/package.json', '/src/node_modules', '/src/dist'];
          for (const s of sources) expect(made, `${s} from ${from}`).toContain(s);
        }
      }
    }
    const buildDir = stages[0]!.instructions.find((i) => i.op === 'WORKDIR')?.args;
    expect(buildDir).toBe('/src');
    // The build writes dist/ from src/ (tsconfig.build.json), and bundles the entrypoint from it (package.json "bundle").
    expect(read('tsconfig.build.json')).toMatch(/"outDir": "dist"/);
    expect(existsSync(join(root, 'src/cli/main.ts'))).toBe(true);
  });

  it('the parser sees through continuations and comments, and refuses the shell form', () => {
    const [s] = parseContainerfile('FROM a AS b\n# c\nRUN x \\\n  # inner\n  y\nENTRYPOINT ["n"]\n');
    expect(s!.instructions.map((i) => [i.op, i.args])).toEqual([
      ['RUN', 'x y'],
      ['ENTRYPOINT', '["n"]'],
    ]);
    expect(() => runtimeImage(parseContainerfile('FROM a\nENTRYPOINT node x\n'))).toThrow(/exec form/);
  });
});

describe('compose file (deploy/compose.yaml)', () => {
  const compose = yamlDoc('deploy/compose.yaml');
  const services = compose.services as Record<string, Obj>;
  const servers = Object.entries(services).filter(([name]) => /^sequoia-[0-9]+$/.test(name));

  it('runs three Sequoia servers on PostgreSQL, each with its own state volume, read-only', () => {
    expect(servers).toHaveLength(3);
    expect(String(at(services, 'postgres.image'))).toMatch(/postgres/);
    const volumes = new Set<string>();
    for (const [, s] of servers) {
      expect(s.read_only).toBe(true);
      expect(String(at(s, 'environment.SEQUOIA_STORE'))).toMatch(/^postgres:\/\/[^@]+@postgres:5432\//);
      expect(at(s, 'depends_on.postgres.condition')).toBe('service_healthy');
      expect(at(s, 'build.dockerfile')).toBe('deploy/Containerfile');
      expect(existsSync(join(root, 'deploy', String(at(s, 'build.context')), 'deploy/Containerfile'))).toBe(true);
      for (const v of s.volumes as string[]) volumes.add(v.split(':')[0]!);
    }
    expect(volumes.size).toBe(3);
  });

  it('runs Prometheus with the shipped alert rules and scrapes every server', () => {
    const prom = services.prometheus!;
    const mounts = (prom.volumes as string[]).map((v) => v.split(':'));
    const rules = mounts.find(([src]) => src === '../ops/prometheus/sequoia-alerts.yml');
    expect(rules).toBeDefined();
    const config = mounts.find(([, dst]) => dst === '/etc/prometheus/prometheus.yml');
    expect(config).toBeDefined();
    const promConfig = yamlDoc(join('deploy', config![0]!));
    // Prometheus resolves a relative rule file against its config file's directory.
    expect((promConfig.rule_files as string[]).map((f) => posix.resolve(posix.dirname(config![1]!), f))).toEqual([rules![1]]);
    const targets = at<Obj[]>(promConfig, 'scrape_configs').flatMap((j) =>
      at<Obj[]>(j, 'static_configs').flatMap((t) => t.targets as string[]),
    );
    expect(targets.map((t) => t.split(':')[0]).sort()).toEqual(servers.map(([n]) => n).sort());
  });
});
