/**
 * The console examples of README.md and docs/ run, so a page cannot drift
 * silently: every ```console block is run command by command (`$ ` lines, `\`
 * continuing them), and each command's output is compared with the lines the
 * page shows under it, after normalizing what differs from run to run (ISO
 * times); stderr is shown with stdout, as in a terminal. A command the page
 * shows no output for must succeed; its output is not compared.
 *
 * Each block runs twice, in a fresh empty directory in each of the two places
 * a reader has the CLI: inside this checkout (after `npm ci`), and inside a
 * consumer's project where the packed tarball is installed (packed and
 * installed once per run, test/helpers/consumer.ts). `npx --no-install
 * sequoia` runs as written, with a fresh npm cache for the checkout and npm
 * offline in both: a download or a rebuild would show. `npm start &` starts `sequoia serve` in
 * the background (the package's bin, run by node: npx would not pass the stop
 * signal on), on a free port here, standing in for 8080, and is waited for;
 * `localhost:8080` is that port.
 *
 * A block that cannot run here says why inside itself, on a line
 * `# not run by the docs test: <reason>`. Commands shown in any other block
 * (```sh, or a bare ``` whose first line is a command) would drift unseen:
 * such a block must be a ```console block, or say why it cannot run.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, PACKAGED_BIN, ROOT, assertBuilt, cleanEnv } from './helpers/cli.js';
import { type ConsumerProject, installPackedConsumer, runCommand } from './helpers/consumer.js';
import { freePort } from './helpers/ports.js';

export interface Step {
  command: string;
  expected: string[];
}

export const SKIP = /^\s*# not run by the docs test: (.{10,})$/m;

interface Block {
  line: number;
  lang: string;
  text: string;
}

/** Every fenced block of a Markdown page, with its language and line number. */
export function fencedBlocks(markdown: string): Block[] {
  const out: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i + 1;
    let j = start;
    while (j < lines.length && lines[j]!.trim() !== '```') j++;
    out.push({ line: start, lang: open[1]!, text: lines.slice(start, j).join('\n') });
    i = j;
  }
  return out;
}

/** A command a reader would type, at the start of a line (not `sequoia: CODE…`, which is output). */
const COMMAND = /^(\$ )?(sudo )?(npx|npm|sequoia|curl|node|docker|podman|kubectl|mysql|psql|systemctl|bash)\s/;

/** A block other than ```console that shows commands: its outputs, if any, are not checked. */
export function showsCommands(b: Block): boolean {
  if (b.lang === 'console') return false;
  if (['sh', 'shell', 'bash', 'zsh'].includes(b.lang)) return true;
  const first = b.text.split('\n').find((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  return b.lang === '' && first !== undefined && COMMAND.test(first.trim());
}

/** `$ ` commands (with `\` continuations and `<<'EOF'` here-documents) and the lines shown under each. */
export function steps(block: string): Step[] {
  const out: Step[] = [];
  let continuing = false;
  let hereEnd: string | undefined;
  const hereDoc = (line: string): string | undefined => /<<-?'?(\w+)'?\s*$/.exec(line)?.[1];
  for (const line of block.split('\n')) {
    const last = out[out.length - 1];
    if (hereEnd !== undefined && last) {
      last.command += `\n${line}`;
      if (line === hereEnd) hereEnd = undefined;
    } else if (continuing && last) {
      last.command += `\n${line}`;
      continuing = line.endsWith('\\');
      hereEnd = hereDoc(line);
    } else if (line.startsWith('$ ')) {
      out.push({ command: line.slice(2), expected: [] });
      continuing = line.endsWith('\\');
      hereEnd = hereDoc(line);
    } else if (last) {
      last.expected.push(line);
    } else if (line.trim() !== '') {
      throw new Error(`output before the first command: ${line}`);
    }
  }
  return out;
}

/** What differs from run to run. */
export function normalize(text: string): string {
  return (
    text
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<TIME>')
      // A tag's generation is random per creation.
      .replace(/"generation":"\d+"/g, '"generation":"<GENERATION>"')
      .split('\n')
      .map((l) => l.trimEnd())
      .join('\n')
      .trim()
  );
}

const MARK = '@@docs-test-step@@';
const STATUS = '@@docs-test-status@@';

function rewrite(command: string, port: number): string {
  let c = command.replace(/localhost:8080/g, `localhost:${port}`);
  if (/^npm start &/.test(c)) {
    c = `"$NODE" "$SERVE_BIN" serve --port ${port} > server.log 2>&1 &
for i in $(seq 1 600); do curl -s -o /dev/null localhost:${port}/healthz && break; sleep 0.1; done`;
  }
  return c;
}

/** Where a reader runs the examples: fresh directories under `parent`, with `env` and the bin `npm start` stands for. */
interface Place {
  readonly parent: string;
  readonly env: NodeJS.ProcessEnv;
  readonly serveBin: string;
}

/** Runs the steps in a fresh directory of the place; answers each step's output. */
async function run(
  list: Step[],
  place: Place = { parent: tmpdir(), env: {}, serveBin: BIN },
): Promise<{ outputs: string[]; statuses: number[]; status: number | null; stderr: string }> {
  const port = await freePort();
  const dir = mkdtempSync(join(place.parent, 'sequoia-docs-'));
  // stderr joins stdout, as in a terminal; each step's exit status follows its output.
  const script = [
    'exec 2>&1',
    "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT",
    ...list.flatMap((s) => [`echo '${MARK}'`, rewrite(s.command, port), `echo "${STATUS}$?"`]),
  ].join('\n');
  try {
    const r = await runCommand('bash', ['-c', script], {
      cwd: dir,
      env: { ...cleanEnv(), ...place.env, NODE: process.execPath, SERVE_BIN: place.serveBin },
      timeoutMs: 150_000,
    });
    const outputs: string[] = [];
    const statuses: number[] = [];
    for (const part of r.stdout.split(`${MARK}\n`).slice(1)) {
      const m = new RegExp(`${STATUS}(\\d+)\\n?$`).exec(part);
      statuses.push(m ? Number(m[1]) : -1);
      outputs.push(m ? part.slice(0, m.index) : part);
    }
    return { outputs, statuses, status: r.status, stderr: r.stderr };
  } finally {
    // The page's server may still be writing its files as it exits: a temp dir left behind is harmless.
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
    } catch {
      // left in the temp dir
    }
  }
}

const pages = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const fenced = pages.flatMap((page) => fencedBlocks(readFileSync(join(ROOT, page), 'utf8')).map((b) => ({ page, ...b })));
const blocks = fenced.filter((b) => b.lang === 'console');

/** Fresh directories inside the checkout (npm finds the project above them, as from any of its folders). */
function checkoutScratch(): string {
  const parent = join(ROOT, 'node_modules', '.cache');
  mkdirSync(parent, { recursive: true });
  return mkdtempSync(join(parent, 'sequoia-docs-'));
}

const remove = (dir: string): void => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });

describe('npx --no-install sequoia in the checkout', () => {
  it("runs the checkout's own build: linked into npx's cache, not rebuilt, nothing downloaded", async () => {
    assertBuilt();
    // npx's first run on a machine: a fresh cache. In a project whose package.json has the bin, npm exec
    // links the project into its cache and runs the project's `prepare` in place: with the build there,
    // a first run rebuilt dist/ silently (under a running server, too).
    const cache = mkdtempSync(join(tmpdir(), 'sequoia-npx-cache-'));
    const dir = checkoutScratch();
    try {
      const built = () => [BIN, PACKAGED_BIN].map((f) => statSync(f).mtimeMs);
      const before = built();
      const r = await runCommand('npx', ['--no-install', 'sequoia', '--version'], {
        cwd: dir,
        env: { ...cleanEnv(), npm_config_cache: cache, npm_config_offline: 'true' },
        timeoutMs: 120_000,
      });
      const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
      expect(`${r.stdout}${r.stderr}`).toBe(`${version}\n`);
      expect(built(), 'dist/ was rebuilt').toEqual(before);
      // a link to the checkout, not a copy that would go stale after the next build
      const installs = readdirSync(join(cache, '_npx'));
      expect(installs).toHaveLength(1);
      expect(realpathSync(join(cache, '_npx', installs[0]!, 'node_modules', 'sequoia-id'))).toBe(realpathSync(ROOT));
    } finally {
      remove(cache);
      remove(dir);
    }
  }, 180_000);
});

describe('docs examples', () => {
  const places: Record<'checkout' | 'consumer', Place> = {} as Record<'checkout' | 'consumer', Place>;
  let consumer: ConsumerProject;
  const cleanup: string[] = [];

  beforeAll(async () => {
    assertBuilt();
    const cache = mkdtempSync(join(tmpdir(), 'sequoia-npx-cache-'));
    const scratch = checkoutScratch();
    const work = mkdtempSync(join(tmpdir(), 'sequoia-docs-consumer-'));
    cleanup.push(cache, scratch, work);
    places.checkout = { parent: scratch, env: { npm_config_cache: cache, npm_config_offline: 'true' }, serveBin: PACKAGED_BIN };
    consumer = await installPackedConsumer(work);
    places.consumer = { parent: consumer.dir, env: { npm_config_offline: 'true' }, serveBin: consumer.bin };
  }, 360_000);

  afterAll(() => {
    // The page's server may still be writing its files as it exits: a temp dir left behind is harmless.
    for (const dir of cleanup) {
      try {
        remove(dir);
      } catch {
        // left in the temp dir
      }
    }
  });

  it('there are console examples to run', () => {
    expect(blocks.length).toBeGreaterThan(1);
  });

  it("a consumer's install of the packed tarball prints no warning", () => {
    expect(consumer.installLog).toMatch(/added \d+ packages/);
    expect(consumer.installLog.split('\n').filter((l) => /warn|ERR|EBADENGINE/i.test(l))).toEqual([]);
  });

  it.each(blocks.flatMap((b) => (['checkout', 'consumer'] as const).map((where) => [`${b.page}:${b.line}`, where, b] as const)))(
    '%s runs in the %s and prints what the page shows',
    async (_name, where, b) => {
      if (SKIP.test(b.text)) return; // the block says why it cannot run here
      const list = steps(b.text);
      expect(list.length).toBeGreaterThan(0);
      const { outputs, statuses, status, stderr } = await run(list, places[where]);
      expect(status, stderr).toBe(0);
      expect(outputs.length).toBe(list.length);
      list.forEach((s, i) => {
        // the page shows no output for it: it must succeed
        if (s.expected.every((l) => l.trim() === ''))
          return expect(statuses[i], `${b.page}:${b.line}: $ ${s.command}\n${outputs[i]}`).toBe(0);
        expect(normalize(outputs[i]!), `${b.page}:${b.line} (${where}): $ ${s.command}`).toBe(normalize(s.expected.join('\n')));
      });
    },
    // each npx is a second or more of npm on a loaded machine; the block's own run is bounded below that
    180_000,
  );
});

describe('commands outside console blocks', () => {
  it.each(fenced.filter(showsCommands).map((b) => [`${b.page}:${b.line}`, b] as const))(
    '%s runs as a ```console block or says why it cannot',
    (_name, b) => {
      expect(SKIP.test(b.text), `${b.page}:${b.line}: make it a \`\`\`console block, or add "# not run by the docs test: <reason>"`).toBe(
        true,
      );
    },
  );
});

describe('the runner itself', () => {
  it('parses commands, continuations and outputs, and normalizes times', () => {
    const s = steps('$ echo a \\\n  b\na b\n$ true\n$ date\n2026-01-01T00:00:00.000Z');
    expect(s).toEqual([
      { command: 'echo a \\\n  b', expected: ['a b'] },
      { command: 'true', expected: [] },
      { command: 'date', expected: ['2026-01-01T00:00:00.000Z'] },
    ]);
    expect(normalize('{"updatedAt":"2026-12-01T00:48:48.043Z"}  \n')).toBe('{"updatedAt":"<TIME>"}');
  });

  it('keeps a here-document with its command', () => {
    // a line of the document that looks like a prompt is still the document's
    expect(steps("$ cat > a.txt <<'EOF'\n{\n$ x\nEOF\n$ cat a.txt\n{")).toEqual([
      { command: "cat > a.txt <<'EOF'\n{\n$ x\nEOF", expected: [] },
      { command: 'cat a.txt', expected: ['{'] },
    ]);
  });

  it('finds commands shown outside console blocks, not output or a synopsis', () => {
    const page =
      '```sh\nnpm run torture\n```\n```\nsequoia audit ids.txt\n```\n```\nsequoia: EADDRINUSE: …\n```\n```text\nsequoia serve [--port N]\n```\n```console\n$ npx sequoia gen uuid\n```';
    expect(fencedBlocks(page).map(showsCommands)).toEqual([true, true, false, false, false]);
  });

  it('fails a block whose shown output differs', async () => {
    const { outputs, status } = await run(steps('$ echo one\ntwo'));
    expect(status).toBe(0);
    expect(normalize(outputs[0]!)).not.toBe('two');
  });
});
