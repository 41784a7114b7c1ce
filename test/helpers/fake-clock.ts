/**
 * A wall clock the test steps while a server runs: libfaketime preloaded,
 * reading its offset from a file at every clock reading (with a cache, a step
 * back was seen to be ignored for seconds), with the monotonic clock left
 * alone, as when NTP or an operator steps the clock.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';

/** Why stepped-clock tests cannot run here, or undefined when they can. */
export function fakeClockMissing(): string | undefined {
  if (!existsSync(LIB)) return `${LIB} is missing (Debian package faketime)`;
  const r = spawnSync(process.execPath, ['-e', 'console.log(Date.now())'], {
    env: { ...process.env, LD_PRELOAD: LIB, FAKETIME: '+1d' },
    encoding: 'utf8',
  });
  if (r.status !== 0 || !(Number(r.stdout) > Date.now() + 80_000_000)) return 'libfaketime does not move the clock of node';
  return undefined;
}

export class SteppedClock {
  readonly file: string;

  constructor(dir: string) {
    this.file = join(dir, 'clock.faketime');
    this.set(0);
  }

  /** The wall clock `offsetSeconds` from the real one (a step, not a drift), from the next clock reading on. */
  set(offsetSeconds: number): void {
    writeFileSync(this.file, `${offsetSeconds >= 0 ? '+' : '-'}${Math.abs(offsetSeconds).toFixed(3)}\n`);
  }

  /** Sets the offset and waits until every process under this clock has read it. */
  async step(offsetSeconds: number): Promise<void> {
    this.set(offsetSeconds);
    await new Promise((r) => setTimeout(r, 100));
  }

  env(): NodeJS.ProcessEnv {
    return {
      LD_PRELOAD: LIB,
      FAKETIME_TIMESTAMP_FILE: this.file,
      FAKETIME_NO_CACHE: '1',
      // Timers and performance.now() run on the monotonic clock, which a step leaves alone.
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    };
  }
}
