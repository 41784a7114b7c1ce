/**
 * The container's entrypoint, run outside a container the way the image runs
 * it (containers cannot start on these machines: docs/deploy.md): the
 * ENTRYPOINT of deploy/Containerfile, in the directory that holds what the
 * image's WORKDIR holds (package.json, node_modules, dist/), as an
 * unprivileged user (`nobody` here, uid 10001 in the image), with every mount
 * read-only but the state volume (mounted at the image's VOLUME path, in a
 * private mount namespace), and configured only by the image's environment
 * variables (plus host and port, as `-p` would). It must serve, answer
 * /readyz and the image's HEALTHCHECK, and on SIGTERM finish the request in
 * flight, give its unused range back and exit 0 within the stop timeout;
 * started again on the same volume it continues at the next unused ID.
 *
 * Needs root (a mount namespace, then setpriv to nobody) and util-linux's
 * unshare and setpriv: skipped with a message without them, a failure under
 * SEQUOIA_REQUIRE_SERVICES=1.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { dirname, join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { assertBuilt } from '../helpers/cli.js';
import { describeWithService } from '../helpers/services.js';
import { durationSeconds, parseContainerfile, read, root, runtimeImage, yamlDoc } from './deploy-files.js';

const NOBODY = 65534;
const image = runtimeImage(parseContainerfile(read('deploy/Containerfile')));
const volume = image.volumes[0]!;
/** The stop timeout the compose file gives (the shortest of deploy/: docs/deploy.md). */
const stopTimeoutMs =
  durationSeconds(
    (yamlDoc('deploy/compose.yaml').services as Record<string, { stop_grace_period?: string }>)['sequoia-1']!.stop_grace_period!,
  ) * 1000;

const describeRoot = await describeWithService('root with unshare and setpriv (entrypoint test)', async () => {
  if (process.getuid?.() !== 0) throw new Error('not root: a mount namespace and a switch to nobody need root');
  execFileSync('unshare', ['--mount', '--propagation', 'private', 'true'], { stdio: 'pipe' });
  execFileSync('setpriv', ['--version'], { stdio: 'pipe' });
});

/**
 * Root, in a private mount namespace: the state dir at the image's VOLUME
 * path; then every other mount (but /proc, /sys, /dev) read-only; a check
 * that the root filesystem, the working directory and /tmp refuse writes
 * and the volume takes them; then the entrypoint as `nobody` with only the
 * image's environment.
 */
const SCRIPT = String.raw`
set -eu
state="$1"; volume="$2"; shift 2
if [ -d "$volume" ]; then
  mount --bind "$state" "$volume"
else
  parent="$(dirname "$volume")"
  [ -d "$parent" ] || { echo "entrypoint-test: $parent does not exist" >&2; exit 90; }
  mount -t tmpfs -o mode=0755 sequoia-image "$parent"
  mkdir "$volume"
  mount --bind "$state" "$volume"
fi
awk '{print $5}' /proc/self/mountinfo | sort -u | while read -r mp; do
  mp="$(printf '%b' "$mp")"
  case "$mp" in
    "$volume"|/proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue ;;
  esac
  mount -o remount,bind,ro "$mp" 2>/dev/null || true
done
for probe in "/.rw-probe-$$" "$PWD/.rw-probe-$$" "/tmp/.rw-probe-$$" "/var/tmp/.rw-probe-$$"; do
  if touch "$probe" 2>/dev/null; then rm -f "$probe"; echo "entrypoint-test: $probe is writable" >&2; exit 91; fi
done
setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups sh -c 'touch "$1/.rw-probe" && rm "$1/.rw-probe"' sh "$volume" \
  || { echo "entrypoint-test: the volume is not writable by the image user" >&2; exit 92; }
setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups test -r "$PWD/package.json" \
  || { echo "entrypoint-test: the image user cannot read $PWD (a parent directory is private, as mktemp -d makes it)" >&2; exit 93; }
echo "entrypoint-test: read-only except $volume" >&2
exec setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups --no-new-privs env -i "$@"
`;

interface Running {
  readonly child: ChildProcess;
  readonly url: string;
  readonly output: () => string;
  readonly exited: Promise<{ code: number | null; signal: string | null; at: number }>;
}

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** The image's environment, with host and port as a port mapping would give them, and PATH to this machine's node. */
function imageEnv(): string[] {
  const env: Record<string, string> = {
    ...image.env,
    SEQUOIA_HOST: '127.0.0.1',
    SEQUOIA_PORT: '0',
    PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
    HOME: '/nonexistent',
  };
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}

async function startEntrypoint(state: string): Promise<Running> {
  const argv = [
    '--mount',
    '--propagation',
    'private',
    '--',
    'sh',
    '-c',
    SCRIPT,
    'entrypoint',
    state,
    volume,
    ...imageEnv(),
    ...image.entrypoint,
    ...image.cmd,
  ];
  const child = spawn('unshare', argv, {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  children.push(child);
  let out = '';
  const exited = new Promise<{ code: number | null; signal: string | null; at: number }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the entrypoint did not start listening:\n${out}`));
    }, 45_000);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"listening"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the entrypoint exited (${code ?? signal}) before listening:\n${out}`));
    });
  });
  return { child, url, output: () => out, exited };
}

/** SIGTERM, as the runtime's STOPSIGNAL; resolves with how long the exit took. */
async function stop(r: Running): Promise<{ code: number | null; signal: string | null; ms: number }> {
  const sent = Date.now();
  r.child.kill(image.stopSignal as NodeJS.Signals);
  const killer = setTimeout(() => r.child.kill('SIGKILL'), stopTimeoutMs);
  const e = await r.exited;
  clearTimeout(killer);
  return { code: e.code, signal: e.signal, ms: e.at - sent };
}

/**
 * A request in flight: its head and part of its body sent, the rest held
 * back until `finish`, which answers the whole response the server sent.
 */
async function requestInFlight(port: number): Promise<{ finish(): Promise<string> }> {
  const body = JSON.stringify({ tag: 'in-flight', step: 10 });
  const socket = connect({ port, host: '127.0.0.1' });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString()));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(
    `POST /v1/tags HTTP/1.1\r\nHost: sequoia\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 5)}`,
  );
  return {
    async finish() {
      socket.write(body.slice(5));
      await closed;
      return answer;
    },
  };
}

describeRoot('the container entrypoint, run as the image runs it', () => {
  const state = mkdtempSync(join(tmpdir(), 'sequoia-volume-'));
  chownSync(state, NOBODY, NOBODY);
  chmodSync(state, 0o700);
  afterAll(() => rmSync(state, { recursive: true, force: true }));

  it('serves as nobody on a read-only root with state on the volume, answers /readyz, drains on SIGTERM within the stop timeout', async () => {
    assertBuilt();
    expect(image.stopSignal).toBe('SIGTERM');
    expect(stopTimeoutMs).toBeGreaterThan(Number(image.env.SEQUOIA_SHUTDOWN_TIMEOUT_MS));

    const first = await startEntrypoint(state);
    expect(first.output()).toContain(`read-only except ${volume}`);
    const ready = await fetch(`${first.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', store: 'sqlite' });

    // The image's HEALTHCHECK command, with the port the server got.
    const port = new URL(first.url).port;
    const [cmd, ...args] = image.healthcheck!.command;
    expect(cmd).toBe('node');
    execFileSync(process.execPath, args, { env: { SEQUOIA_PORT: port }, timeout: 20_000 });

    const created = await fetch(`${first.url}/v1/tags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tag: 'deploy', step: 100 }),
    });
    expect(created.status).toBe(201);
    const ids = (await (await fetch(`${first.url}/v1/segment/deploy?count=5`)).json()) as { ids: string[] };
    expect(ids.ids).toEqual(['1', '2', '3', '4', '5']);

    // Everything the server wrote is on the volume, owned by the image user.
    const files = readdirSync(state);
    expect(files).toEqual(expect.arrayContaining(['state.db', 'sequoia.db']));
    for (const f of files) expect(statSync(join(state, f)).uid, f).toBe(NOBODY);

    // SIGTERM with a request in flight: the server stops accepting, waits for it, answers it, then exits 0.
    const pending = await requestInFlight(Number(port));
    await sleep(300);
    const stopping = stop(first);
    await sleep(1000);
    expect(first.child.exitCode).toBeNull(); // still draining
    expect(first.output()).toMatch(/"msg":"shutting down"/);
    const answer = await pending.finish();
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    const stopped = await stopping;
    expect(stopped).toMatchObject({ code: 0, signal: null });
    expect(stopped.ms).toBeLessThan(stopTimeoutMs);
    expect(first.output()).toMatch(/"msg":"stopped"/);

    // A new "container" on the same volume: the drain gave the unused range back, so it continues at 6.
    const second = await startEntrypoint(state);
    expect((await fetch(`${second.url}/readyz`)).status).toBe(200);
    expect(await (await fetch(`${second.url}/api/segment/get/deploy`)).text()).toBe('6');
    const again = await stop(second);
    expect(again).toMatchObject({ code: 0, signal: null });
    expect(again.ms).toBeLessThan(stopTimeoutMs);
  });
});
