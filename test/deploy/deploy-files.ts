/**
 * Readers for the files under deploy/: the Containerfile (parsed like a
 * container builder reads it), the YAML manifests, the systemd unit and its
 * environment file. The deploy tests check these against the field table
 * (FIELDS) and the route table.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const deployDir = join(root, 'deploy');
export const read = (path: string): string => readFileSync(join(root, path), 'utf8');

/** Every file under deploy/, as paths relative to the repository root. */
export function deployFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(root, p));
    }
  };
  walk(deployDir);
  return out.sort();
}

/** All documents of a YAML file (a `---`-separated stream), parse errors thrown. */
export function yamlDocs(path: string): Record<string, unknown>[] {
  return parseAllDocuments(read(path)).map((d) => {
    if (d.errors.length > 0) throw new Error(`${path}: ${d.errors[0]!.message}`);
    return d.toJS() as Record<string, unknown>;
  });
}

export function yamlDoc(path: string): Record<string, unknown> {
  const docs = yamlDocs(path);
  if (docs.length !== 1) throw new Error(`${path}: expected one YAML document, found ${docs.length}`);
  return docs[0]!;
}

// ---------------------------------------------------------------- Containerfile

export interface Instruction {
  /** Upper-case keyword: FROM, RUN, ENV… */
  readonly op: string;
  /** The rest of the (joined) line. */
  readonly args: string;
  readonly line: number;
}

export interface Stage {
  readonly from: string;
  readonly name: string | undefined;
  readonly instructions: Instruction[];
}

/**
 * Parses a Containerfile as builders do: `\` continues a line, comment lines
 * (also inside a continued instruction) are dropped, the keyword is the first
 * word, and each FROM opens a stage.
 */
export function parseContainerfile(text: string): Stage[] {
  const instructions: Instruction[] = [];
  const lines = text.split('\n');
  let buf = '';
  let start = 0;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const trimmed = raw.trim();
    if (buf === '' && (trimmed === '' || trimmed.startsWith('#'))) continue;
    if (buf !== '' && trimmed.startsWith('#')) continue;
    if (buf === '') start = i + 1;
    if (trimmed.endsWith('\\')) {
      buf += trimmed.slice(0, -1).trimEnd() + ' ';
      continue;
    }
    buf += trimmed;
    const m = /^([A-Za-z]+)\s*(.*)$/s.exec(buf);
    if (!m) throw new Error(`Containerfile line ${start}: cannot parse ${JSON.stringify(buf)}`);
    instructions.push({ op: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start });
    buf = '';
  }
  if (buf !== '') throw new Error('Containerfile: the last instruction ends with a continuation');
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.op === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!m) throw new Error(`Containerfile line ${ins.line}: bad FROM ${ins.args}`);
      stages.push({ from: m[1]!, name: m[2], instructions: [] });
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`Containerfile line ${ins.line}: ${ins.op} before FROM`);
      stage.instructions.push(ins);
    }
  }
  return stages;
}

/** `ENV A=1 B="two words"` (the `ENV A 1` legacy form too) as a map. */
export function parseEnvArgs(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!args.includes('=')) {
    const m = /^(\S+)\s+(.*)$/.exec(args);
    if (m) out[m[1]!] = m[2]!;
    return out;
  }
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)/g)) {
    const v = m[2]!;
    out[m[1]!] = v.startsWith('"') ? (JSON.parse(v) as string) : v.startsWith("'") ? v.slice(1, -1) : v;
  }
  return out;
}

/** The exec (JSON array) form of ENTRYPOINT, CMD, HEALTHCHECK CMD; the shell form is refused. */
export function execForm(args: string, what: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw new Error(`${what} must use the exec form (a JSON array), got ${args}`);
  }
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) throw new Error(`${what}: not an array of strings`);
  return parsed as string[];
}

export interface RuntimeImage {
  readonly base: string;
  readonly env: Record<string, string>;
  readonly workdir: string | undefined;
  readonly user: string | undefined;
  readonly volumes: string[];
  readonly expose: number[];
  readonly entrypoint: string[];
  readonly cmd: string[];
  readonly healthcheck: { options: Record<string, string>; command: string[] } | undefined;
  readonly stopSignal: string | undefined;
}

/** What the final stage of the Containerfile makes of the image. */
export function runtimeImage(stages: Stage[]): RuntimeImage {
  const last = stages.at(-1);
  if (!last) throw new Error('Containerfile: no stage');
  const env: Record<string, string> = {};
  let workdir: string | undefined;
  let user: string | undefined;
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  let stopSignal: string | undefined;
  let healthcheck: RuntimeImage['healthcheck'];
  const volumes: string[] = [];
  const expose: number[] = [];
  for (const ins of last.instructions) {
    switch (ins.op) {
      case 'ENV':
        Object.assign(env, parseEnvArgs(ins.args));
        break;
      case 'WORKDIR':
        workdir = ins.args;
        break;
      case 'USER':
        user = ins.args;
        break;
      case 'VOLUME':
        volumes.push(...(ins.args.startsWith('[') ? execForm(ins.args, 'VOLUME') : ins.args.split(/\s+/)));
        break;
      case 'EXPOSE':
        expose.push(...ins.args.split(/\s+/).map((p) => Number(p.split('/')[0])));
        break;
      case 'ENTRYPOINT':
        entrypoint = execForm(ins.args, 'ENTRYPOINT');
        break;
      case 'CMD':
        cmd = execForm(ins.args, 'CMD');
        break;
      case 'STOPSIGNAL':
        stopSignal = ins.args;
        break;
      case 'HEALTHCHECK': {
        const m = /^((?:--[a-z-]+=\S+\s+)*)CMD\s+(.*)$/s.exec(ins.args);
        if (!m) throw new Error(`HEALTHCHECK must be "[--option=value…] CMD [...]", got ${ins.args}`);
        const options: Record<string, string> = {};
        for (const o of m[1]!.matchAll(/--([a-z-]+)=(\S+)/g)) options[o[1]!] = o[2]!;
        healthcheck = { options, command: execForm(m[2]!, 'HEALTHCHECK CMD') };
        break;
      }
    }
  }
  return { base: last.from, env, workdir, user, volumes, expose, entrypoint, cmd, healthcheck, stopSignal };
}

/** Docker/compose durations: `30s`, `1m30s`, `500ms`; in seconds. */
export function durationSeconds(text: string): number {
  const parts = [...text.matchAll(/([0-9.]+)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) throw new Error(`not a duration: ${text}`);
  const unit: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };
  return parts.reduce((sum, p) => sum + Number(p[1]) * unit[p[2]!]!, 0);
}

// ---------------------------------------------------------------- systemd

/** A unit file as section → key → values (a key may repeat). */
export function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const s = /^\[(.+)\]$/.exec(line);
    if (s) {
      current = new Map();
      sections.set(s[1]!, current);
      continue;
    }
    const kv = /^([A-Za-z0-9]+)\s*=\s*(.*)$/.exec(line);
    if (!kv || !current) throw new Error(`unit: cannot parse ${JSON.stringify(line)}`);
    const list = current.get(kv[1]!) ?? [];
    list.push(kv[2]!);
    current.set(kv[1]!, list);
  }
  return sections;
}

/** An environment file: active `KEY=VALUE` lines, and `#KEY=VALUE` lines that show a default. */
export function parseEnvFile(text: string): { active: Map<string, string>; defaults: Map<string, string> } {
  const active = new Map<string, string>();
  const defaults = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const m = /^(#?)([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (!m) continue;
    let value = m[3]!;
    if (/^'.*'$|^".*"$/.test(value)) value = value.slice(1, -1);
    const into = m[1] === '#' ? defaults : active;
    if (into.has(m[2]!)) throw new Error(`environment file: ${m[2]} listed twice`);
    into.set(m[2]!, value);
  }
  return { active, defaults };
}
