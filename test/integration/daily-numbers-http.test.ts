/**
 * Date-stamped order numbers over HTTP (issue 43's proof) on real `sequoia
 * serve` processes: two servers on one SQLite store, their wall clock driven
 * by libfaketime (monotonic time left alone, as when NTP steps a clock) to
 * an hour before midnight in Asia/Shanghai, then past it, then stepped back
 * ten minutes before it; then one server restarts cleanly and the other is
 * killed and restarted, with the clock still behind. No number is handed out
 * twice, a server's day never goes back (not across its restart either), and
 * the same instant is another day in UTC.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sequoia, startServe } from '../helpers/cli.js';
import { fakeClockMissing, SteppedClock } from '../helpers/fake-clock.js';
import { servicesRequired } from '../helpers/services.js';

const running: ServerProcess[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const s of running) s.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const missing = fakeClockMissing();
if (missing && servicesRequired) throw new Error(`stepped-clock tests need libfaketime: ${missing}`);
if (missing) console.warn(`[sequoia tests] SKIPPING daily numbers under a stepped clock: ${missing}`);
const describeClock = describe.skipIf(missing !== undefined);

/** The next midnight in Asia/Shanghai (UTC+8, no DST): 16:00 UTC, at least two hours from now. */
function nextShanghaiMidnight(): number {
  const now = Date.now();
  const d = new Date(now);
  let m = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), 16);
  while (m - now < 2 * 3_600_000) m += 86_400_000;
  return m;
}

const ymd = (ms: number, timeZone: string) =>
  new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(ms).replaceAll('-', '');

describeClock('daily numbers over HTTP: time zone, two servers, a clock stepped back over midnight, restarts', () => {
  it('no number twice, and no server goes back a day', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sequoia-daily-http-'));
    dirs.push(dir);
    const clock = new SteppedClock(dir);
    const M = nextShanghaiMidnight();
    const dayBefore = ymd(M - 1, 'Asia/Shanghai');
    const dayAfter = ymd(M, 'Asia/Shanghai');
    expect(dayAfter > dayBefore).toBe(true);
    /** Sets the servers' wall clock to `at` (it runs on from there). */
    const setClock = (at: number) => clock.set((at - Date.now()) / 1000);

    const args = (name: string) => ['--store', `sqlite:${join(dir, 'store.db')}`, '--state-dir', join(dir, name)];
    const start = async (name: string) => {
      const s = await startServe(args(name), clock.env());
      running.push(s);
      return s;
    };
    /** Waits until the server's own clock (its Date header, whole seconds) satisfies `ok`. */
    const serverClock = async (s: ServerProcess, ok: (ms: number) => boolean): Promise<void> => {
      let seen = Number.NaN;
      // Node refreshes its Date header about once a second: poll for a while, not a number of times.
      for (const until = performance.now() + 20_000; performance.now() < until;) {
        seen = Date.parse((await fetch(`${s.url}/healthz`)).headers.get('date') ?? '');
        if (ok(seen)) return;
      }
      throw new Error(`the server's clock reads ${new Date(seen).toISOString()}`);
    };

    const issued = new Map<string, string>();
    const lastDay = new Map<string, string>();
    /** `count` numbers of `tag` in `timeZone` from server `name`: each new, the day never before its last. */
    const take = async (s: ServerProcess, name: string, count: number, tag = 'ORD', timeZone = 'Asia/Shanghai'): Promise<string> => {
      const r = await fetch(`${s.url}/v1/daily/${tag}?timeZone=${timeZone}&count=${count}`);
      const body = (await r.json()) as { day: string; ids: string[]; error?: unknown };
      expect(r.status, JSON.stringify(body.error)).toBe(200);
      expect(body.ids).toHaveLength(count);
      for (const n of body.ids) {
        // Each base tag is its own space of numbers (ORD's and ORDUTC's 20261205-000001 are two numbers).
        const k = `${tag} ${n}`;
        expect(issued.has(k), `${k} from ${name}, already from ${issued.get(k)}`).toBe(false);
        issued.set(k, name);
        expect(n.slice(0, 8)).toBe(body.day);
      }
      const key = `${name}/${tag}`;
      expect(body.day >= (lastDay.get(key) ?? ''), `${name} went back from ${lastDay.get(key)} to ${body.day}`).toBe(true);
      lastDay.set(key, body.day);
      return body.day;
    };

    // The base tags, as an admin makes them (the route makes only their day tags).
    for (const tag of ['ORD', 'ORDUTC']) {
      const made = sequoia(['tag', 'create', tag, ...args('admin')]);
      expect(made.status, made.stderr).toBe(0);
    }

    // An hour before midnight in Shanghai: both servers on the day before.
    setClock(M - 3_600_000);
    let [a, b] = await Promise.all([start('a'), start('b')]);
    expect(await take(a, 'a', 5)).toBe(dayBefore);
    expect(await take(b, 'b', 5)).toBe(dayBefore);

    // Past midnight: the next day in Shanghai, still the day before in UTC.
    setClock(M + 5_000);
    await Promise.all([serverClock(a, (t) => t >= M), serverClock(b, (t) => t >= M)]);
    expect(await take(a, 'a', 5)).toBe(dayAfter);
    expect(await take(b, 'b', 5)).toBe(dayAfter);
    expect(await take(a, 'a', 1, 'ORDUTC', 'UTC')).toBe(ymd(M, 'UTC'));
    expect(ymd(M, 'UTC')).toBe(dayBefore);

    // NTP steps the clock back ten minutes before midnight: both stay on the later day, past a range (step 100) too.
    setClock(M - 600_000);
    await Promise.all([serverClock(a, (t) => t < M - 500_000), serverClock(b, (t) => t < M - 500_000)]);
    expect(await take(a, 'a', 150)).toBe(dayAfter);
    expect(await take(b, 'b', 150)).toBe(dayAfter);

    // A stops cleanly and starts again, B is killed and starts again; the clock is still behind midnight.
    a.child.kill('SIGTERM');
    b.child.kill('SIGKILL');
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe('SIGKILL');
    [a, b] = await Promise.all([start('a'), start('b')]);
    await Promise.all([serverClock(a, (t) => t < M), serverClock(b, (t) => t < M)]);
    expect(await take(a, 'a', 150)).toBe(dayAfter);
    expect(await take(b, 'b', 150)).toBe(dayAfter);
    await Promise.all(
      [a, b].map(async (s, i) => {
        for (let k = 0; k < 20; k++) await take(s, i === 0 ? 'a' : 'b', 10);
      }),
    );

    expect(issued.size).toBe(5 + 5 + 5 + 5 + 1 + 150 * 4 + 400);
    const counters = [...issued.keys()].filter((k) => k.startsWith(`ORD ${dayAfter}-`)).map((k) => Number(k.slice(13)));
    expect(new Set(counters).size).toBe(counters.length);
    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);
  }, 120_000);
});
